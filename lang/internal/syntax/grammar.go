// Package syntax is the model language's grammar: participle structs, the
// lexer (with the checks a grammar cannot make) and Parse. Package lang
// resolves what it parses.
package syntax

import (
	"bytes"
	"errors"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The grammar, as participle structs. Semicolons are optional everywhere;
// statements are told apart by their keywords.

// Lexer is the language's lexer, guarded (see guard.go); the C-node
// configuration files share it.
var Lexer lexer.Definition = guarded{lexer.MustSimple([]lexer.SimpleRule{
	{Name: "Comment", Pattern: `//[^\n]*|/\*([^*]|\*+[^*/])*\*+/`},
	{Name: "Unclosed", Pattern: `/\*`}, // a /* that Comment found no */ for
	{Name: "String", Pattern: `"(\\.|[^"\\\n])*"`},
	{Name: "Layout", Pattern: `'[^'\n]*'`},
	{Name: "IPv4", Pattern: `\d+\.\d+\.\d+\.\d+`},
	{Name: "Int", Pattern: `0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d[\d_]*`},
	{Name: "Ident", Pattern: `[a-zA-Z_][a-zA-Z0-9_]*`},
	{Name: "Punct", Pattern: `&&&|&&|\|\||==|!=|<=|>=|<<|>>|->|[-+*/&|^~!<>=(){}\[\],;:.@]`},
	{Name: "Whitespace", Pattern: `[ \t\r\n]+`},
})}

var parser = participle.MustBuild[File](
	participle.Lexer(Lexer),
	participle.Elide("Comment", "Whitespace"),
	participle.UseLookahead(4),
)

type File struct {
	Decls []*Decl `parser:"@@*"`
}

type Decl struct {
	Include  *Include      `parser:"  @@"`
	Header   *HeaderDecl   `parser:"| @@"`
	Next     *NextDecl     `parser:"| @@"`
	Action   *ActionDecl   `parser:"| @@"`
	Table    *TableDecl    `parser:"| @@"`
	State    *StateDecl    `parser:"| @@"`
	Register *RegisterDecl `parser:"| @@"`
	Graph    *GraphDecl    `parser:"| @@"`
}

type Include struct {
	Pos  lexer.Position
	Path string `parser:"'include' @String ';'?"`
}

// HeaderDecl declares a header, or with Checksum alone sets the
// checksum rule of a header declared elsewhere (`header udp @checksum(l4)`).
type HeaderDecl struct {
	Pos      lexer.Position
	Kind     string        `parser:"@('header' | 'metadata')"`
	Name     string        `parser:"@Ident"`
	Layout   *string       `parser:"( @Layout ';'?"`
	Fields   []*FieldDecl  `parser:"| '{' @@* '}'"`
	Checksum *ChecksumAttr `parser:"| @@ ';'? )"`
}

type FieldDecl struct {
	Pos      lexer.Position
	Name     string        `parser:"@Ident ':'"`
	Width    *string       `parser:"( @Int"`
	Bytes    *Expr         `parser:"| 'bytes' '(' @@ ')' )"`
	Checksum *ChecksumAttr `parser:"@@? ';'?"`
}

type ChecksumAttr struct {
	Pos      lexer.Position
	Kind     string `parser:"'@' 'checksum' '(' @('header' | 'message' | 'l4')"`
	Optional bool   `parser:"( ',' @'optional' )? ')'"`
}

type NextDecl struct {
	Pos   lexer.Position
	Field *Ref    `parser:"'next' @@"`
	Cases []*Case `parser:"'{' ( @@ ','? )* '}'"`
}

type Case struct {
	Pos     lexer.Position
	Default bool   `parser:"( @'default'"`
	Value   *Value `parser:"| @@ )"`
	Target  string `parser:"'->' @Ident"`
}

type ActionDecl struct {
	Pos    lexer.Position
	Name   string       `parser:"'action' @Ident"`
	Params []*ParamDecl `parser:"'(' ( @@ ( ',' @@ )* )? ')'"`
	Body   []*Assign    `parser:"'{' @@* '}'"`
}

type ParamDecl struct {
	Pos   lexer.Position
	Name  string `parser:"@Ident ':'"`
	Width string `parser:"@Int"`
}

type Assign struct {
	Pos lexer.Position
	Dst *Ref  `parser:"@@ '='"`
	Src *Expr `parser:"@@ ';'?"`
}

type TableDecl struct {
	Pos   lexer.Position
	Name  string       `parser:"'table' @Ident '{'"`
	Items []*TableItem `parser:"@@* '}'"`
}

type TableItem struct {
	Pos     lexer.Position
	Keys    []*KeyDecl `parser:"( 'key' '{' @@* '}'"`
	Actions []string   `parser:"| 'actions' '{' ( @Ident ','? )* '}'"`
	Prio    bool       `parser:"| @'priorities'"`
	Size    *string    `parser:"| 'size' @Int"`
	Default *Call      `parser:"| 'default' @@ ) ';'?"`
}

// StateDecl declares keyed state: `state events { key { … } buffer re.Length
// max 1 GiB timeout 500ms events 1024 bytes 4 GiB }`.
type StateDecl struct {
	Pos   lexer.Position
	Name  string       `parser:"'state' @Ident '{'"`
	Items []*StateItem `parser:"@@* '}'"`
}

// RegisterDecl declares registers the data path reads and writes:
// `register qps { key { rx.qpn } value qp size 256 }`.
type RegisterDecl struct {
	Pos   lexer.Position
	Name  string          `parser:"'register' @Ident '{'"`
	Items []*RegisterItem `parser:"@@* '}'"`
}

type RegisterItem struct {
	Pos   lexer.Position
	Keys  []*Expr `parser:"( 'key' '{' ( @@ ','? )* '}'"`
	Value *string `parser:"| 'value' @Ident"`
	Size  *string `parser:"| 'size' @Int ) ';'?"`
}

type StateItem struct {
	Pos    lexer.Position
	Keys   []*Expr `parser:"( 'key' '{' ( @@ ','? )* '}'"`
	Buffer *Expr   `parser:"| 'buffer' @@"`
	Limit  string  `parser:"| @('max' | 'timeout' | 'events' | 'bytes')"`
	Amount *Amount `parser:"  @@ ) ';'?"`
}

// Amount is a number with an optional unit: 1 GiB, 500ms.
type Amount struct {
	Pos   lexer.Position
	Value string  `parser:"@Int"`
	Unit  *string `parser:"@('B' | 'KiB' | 'MiB' | 'GiB' | 'ns' | 'us' | 'ms' | 's')?"`
}

type KeyDecl struct {
	Pos  lexer.Position
	Expr *Expr  `parser:"@@ ':'"`
	Kind string `parser:"@Ident ';'?"`
}

type Call struct {
	Pos  lexer.Position
	Name string   `parser:"@Ident"`
	Args []*Value `parser:"( '(' ( @@ ( ',' @@ )* )? ')' )?"`
}

type GraphDecl struct {
	Pos   lexer.Position
	Kind  string  `parser:"@('lpg' | 'prg')"`
	Name  string  `parser:"@Ident '{'"`
	Items []*Item `parser:"@@* '}'"`
}

type Item struct {
	Limits  *LimitsDecl  `parser:"  @@"`
	Cluster *ClusterDecl `parser:"| @@"`
	Node    *NodeDecl    `parser:"| @@"`
	Logic   *LogicDecl   `parser:"| @@"`
	Config  *ConfigDecl  `parser:"| @@"`
}

// LimitsDecl declares a PRG's resources: `limits { tables 8  table_size 4096 }`.
type LimitsDecl struct {
	Pos    lexer.Position
	Limits []*Limit `parser:"'limits' '{' @@* '}'"`
}

type Limit struct {
	Pos   lexer.Position
	Name  string `parser:"@Ident"`
	Value string `parser:"@Int ';'?"`
}

type ClusterDecl struct {
	Pos   lexer.Position
	Name  string  `parser:"'cluster' @Ident '{'"`
	Items []*Item `parser:"@@* '}'"`
}

type Attrs struct {
	Pos   lexer.Position
	Names []string `parser:"'[' ( @Ident ( ',' @Ident )* )? ']'"`
}

type NodeDecl struct {
	Pos   lexer.Position
	Name  string      `parser:"'node' @Ident"`
	Attrs *Attrs      `parser:"@@? '{'"`
	Stmts []*NodeStmt `parser:"@@* '}'"`
}

type NodeStmt struct {
	Op    *OpDecl    `parser:"  'op' @@ ';'?"`
	Port  *PortDecl  `parser:"| @@"`
	Spawn *SpawnDecl `parser:"| @@"`
}

type PortDecl struct {
	Pos     lexer.Position
	Name    string   `parser:"'port' @Ident"`
	Targets []*Ident `parser:"( '->' @@ ( ',' @@ )* )?"`
	Pred    *string  `parser:"( 'pred' @String )? ';'?"`
}

type Ident struct {
	Pos  lexer.Position
	Name string `parser:"@Ident"`
}

type SpawnDecl struct {
	Pos     lexer.Position
	Port    string   `parser:"'spawn' @Ident '->'"`
	Targets []*Ident `parser:"@@ ( ',' @@ )* ';'?"`
}

type LogicDecl struct {
	Pos   lexer.Position
	Logic string      `parser:"@('and' | 'or' | 'nand' | 'nor' | 'not')"`
	Name  string      `parser:"@Ident"`
	Attrs *Attrs      `parser:"@@? '{'"`
	Ports []*PortDecl `parser:"@@* '}'"`
}

type ConfigDecl struct {
	Pos   lexer.Position
	Name  string      `parser:"'config' @Ident ':'"`
	Type  *TypeRef    `parser:"@@"`
	Value *Literal    `parser:"( '=' @@ )?"`
	Attrs *Attrs      `parser:"@@? '{'"`
	Ports []*PortDecl `parser:"@@* '}'"`
}

type TypeRef struct {
	Name string     `parser:"@Ident"`
	Args []*TypeArg `parser:"( '<' @@ ( ',' @@ )* '>' )?"`
}

type TypeArg struct {
	Int  *string  `parser:"  @Int"`
	Type *TypeRef `parser:"| @@"`
}

type Literal struct {
	Pos    lexer.Position
	String *string    `parser:"  @String"`
	Value  *Value     `parser:"| @@"`
	Ident  *string    `parser:"| @Ident"`
	List   []*Literal `parser:"| '[' ( @@ ( ',' @@ )* )? ']'"`
}

// OpDecl is the operation of an F-node.
type OpDecl struct {
	Pos      lexer.Position
	Input    bool        `parser:"  @'input'"`
	InParse  *string     `parser:"  ( 'parse' @Ident )?"`
	Parse    *string     `parser:"| 'parse' @Ident"`
	Extract  *string     `parser:"| 'extract' @Ident"`
	Test     *Expr       `parser:"| 'test' @@"`
	Switch   *SwitchOp   `parser:"| @@"`
	Lookup   *string     `parser:"| 'lookup' @Ident"`
	Set      *SetOp      `parser:"| @@"`
	Push     *PushOp     `parser:"| @@"`
	Pop      *PopOp      `parser:"| @@"`
	Checksum *ChecksumOp `parser:"| @@"`
	Emit     bool        `parser:"| @'emit'"`
	Steer    *SteerOp    `parser:"| @@"`
	Drop     *DropOp     `parser:"| @@"`
	Count    *CountOp    `parser:"| @@"`
	Place    *PlaceOp    `parser:"| @@"`
	Load     *string     `parser:"| 'load' @Ident"`
	Store    *string     `parser:"| 'store' @Ident"`
	Cut      bool        `parser:"| @'cut'"`
	Context  *string     `parser:"| 'context' @String"`
	Nop      bool        `parser:"| @'nop'"`
}

type SwitchOp struct {
	Expr  *Expr   `parser:"'switch' @@"`
	Cases []*Case `parser:"'{' ( @@ ','? )* '}'"`
}

type SetOp struct {
	Assigns []*Assign `parser:"'set' '{' @@* '}'"`
	Update  []*Ident  `parser:"( 'update' @@ ( ',' @@ )* )?"`
}

type PushOp struct {
	Header string  `parser:"'push' @Ident"`
	Extra  *string `parser:"( 'extra' @Int )?"`
	After  *string `parser:"( 'after' @Ident )?"`
}

type PopOp struct {
	Header string   `parser:"'pop' @Ident"`
	Update []*Ident `parser:"( 'update' @@ ( ',' @@ )* )?"`
}

// ChecksumOp verifies or computes a header's checksum, or, written
// icrc(H), the RoCEv2 ICRC of the transport starting at header H.
type ChecksumOp struct {
	Mode   string `parser:"'checksum' @('verify' | 'compute')"`
	ICRC   string `parser:"( 'icrc' '(' @Ident ')'"`
	Header string `parser:"| @Ident )"`
}

// PlaceOp places the payload at the cursor in keyed state.
type PlaceOp struct {
	State  string `parser:"'place' @Ident"`
	Offset *Expr  `parser:"'at' @@"`
	Size   *Expr  `parser:"( 'size' @@ )?"`
}

type SteerOp struct {
	Kind   string `parser:"'steer' @('queue' | 'socket')"`
	Target string `parser:"@(Int | String | Ident)"`
}

type DropOp struct {
	Drop   bool    `parser:"@'drop'"`
	Reason *string `parser:"@String?"`
}

type CountOp struct {
	Count bool    `parser:"@'count'"`
	Name  *string `parser:"@String?"`
}

// Expressions, by precedence: || < && < ! < comparison < + - | ^ < * & << >> < ~.

type Expr struct {
	Pos   lexer.Position
	Left  *AndExpr   `parser:"@@"`
	Right []*AndExpr `parser:"( '||' @@ )*"`
}

type AndExpr struct {
	Pos   lexer.Position
	Left  *NotExpr   `parser:"@@"`
	Right []*NotExpr `parser:"( '&&' @@ )*"`
}

type NotExpr struct {
	Pos lexer.Position
	Not *NotExpr `parser:"  '!' @@"`
	Cmp *CmpExpr `parser:"| @@"`
}

type CmpExpr struct {
	Pos   lexer.Position
	Left  *Sum   `parser:"@@"`
	Op    string `parser:"( @('==' | '!=' | '<=' | '>=' | '<' | '>')"`
	Right *Sum   `parser:"  @@"`
	In    *InSet `parser:"| 'in' @@ )?"`
}

type InSet struct {
	Pos    lexer.Position
	Lo     *Sum    `parser:"( '[' @@ ','"`
	Hi     *Sum    `parser:"  @@ ']'"`
	Value  *Sum    `parser:"| @@"`
	Mask   *Sum    `parser:"  ( '&&&' @@"`
	Prefix *string `parser:"  | '/' @Int )? )"`
}

type Sum struct {
	Pos   lexer.Position
	Left  *Term    `parser:"@@"`
	Right []*SumOp `parser:"@@*"`
}

type SumOp struct {
	Op    string `parser:"@('+' | '-' | '|' | '^')"`
	Right *Term  `parser:"@@"`
}

type Term struct {
	Pos   lexer.Position
	Left  *Unary    `parser:"@@"`
	Right []*TermOp `parser:"@@*"`
}

type TermOp struct {
	Op    string `parser:"@('*' | '&' | '<<' | '>>')"`
	Right *Unary `parser:"@@"`
}

type Unary struct {
	Pos     lexer.Position
	Inv     *Unary   `parser:"  '~' @@"`
	Primary *Primary `parser:"| @@"`
}

type Primary struct {
	Pos   lexer.Position
	Valid *string `parser:"  'valid' '(' @Ident ')'"`
	Len   *string `parser:"| 'len' '(' @Ident ')'"`
	Ones  *Expr   `parser:"| 'popcount' '(' @@ ')'"`
	Cast  *Cast   `parser:"| @@"`
	Value *Value  `parser:"| @@"`
	Ref   *Ref    `parser:"| @@"`
	Paren *Expr   `parser:"| '(' @@ ')'"`
}

type Cast struct {
	Width string `parser:"'bit' '<' @Int '>'"`
	Expr  *Expr  `parser:"'(' @@ ')'"`
}

type Value struct {
	Pos  lexer.Position
	Int  *string `parser:"  @Int"`
	IPv4 *string `parser:"| @IPv4"`
}

type Ref struct {
	Pos   lexer.Position
	Name  string  `parser:"@Ident"`
	Field *string `parser:"( '.' @Ident )?"`
}

// Parse parses one file; errors are participle's, positioned.
func Parse(name string, src []byte) (*File, error) {
	f, err := parser.ParseBytes(name, src)
	if err != nil {
		return nil, inNode(name, src, err)
	}
	return f, nil
}

// stmtParser parses one statement of a node.
var stmtParser = participle.MustBuild[NodeStmt](
	participle.Lexer(Lexer),
	participle.Elide("Comment", "Whitespace"),
	participle.UseLookahead(4),
)

// inNode finds where a node's statement goes wrong. A statement that fails
// part way (`op switch x 1 -> a` without its braces) makes participle
// backtrack out of the whole node and report "expected }" at the word
// `node`, far from the mistake; parsing the node's statements one by one,
// each from its own bytes, finds the first that fails and its own error.
// Any other error is kept.
func inNode(name string, src []byte, err error) error {
	var pe participle.Error
	if !errors.As(err, &pe) {
		return err
	}
	node := pe.Position()
	if node.Offset < 0 || node.Offset >= len(src) || !bytes.HasPrefix(src[node.Offset:], []byte("node")) {
		return err
	}
	lx, lerr := Lexer.Lex(name, bytes.NewReader(src[node.Offset:]))
	if lerr != nil {
		return err
	}
	// The statements' starts, then the node's end.
	var stmts []lexer.Position
	for depth := 0; ; {
		t, terr := lx.Next()
		if terr != nil || t.EOF() {
			return err
		}
		if t.Value == "{" {
			depth++
		} else if t.Value == "}" {
			if depth--; depth == 0 {
				stmts = append(stmts, t.Pos)
				break
			}
		} else if depth == 1 && (t.Value == "op" || t.Value == "port" || t.Value == "spawn") {
			stmts = append(stmts, t.Pos)
		}
	}
	for i := 0; i+1 < len(stmts); i++ {
		at, end := stmts[i], stmts[i+1]
		_, serr := stmtParser.ParseBytes(name, src[node.Offset+at.Offset:node.Offset+end.Offset])
		if !errors.As(serr, &pe) {
			continue
		}
		// The statement's positions made the file's.
		pos := pe.Position()
		pos.Offset += node.Offset + at.Offset
		if pos.Line == 1 {
			pos.Column += at.Column - 1
			if at.Line == 1 {
				pos.Column += node.Column - 1
			}
		}
		pos.Line += node.Line - 1 + at.Line - 1
		return participle.Errorf(pos, "%s", pe.Message())
	}
	return err
}
