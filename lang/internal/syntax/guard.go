package syntax

import (
	"fmt"
	"io"

	"github.com/alecthomas/participle/v2/lexer"
)

// maxNesting bounds how deeply a model may nest. The parser recurses once
// per level (and the resolver and every backend once more), so without a
// bound a file of a million `(` overflows the stack instead of reporting
// an error.
const maxNesting = 100

// A level is opened by a bracket `(`, `[` or `{`, which its closer ends,
// or by a prefix that the parser recurses on: `!` and `~` (unary
// operators) and `<` (type arguments, `list<list<...>>`, and casts). These
// soft levels end with the closer of the bracket around them, and at a
// token no expression or type runs past (`&&`, `||`, `=`, `:`, `;`); a `<`
// also ends at its `>`. A comparison `a < b` thus counts one level until
// its expression ends.
var (
	closerOf  = map[string]string{")": "(", "]": "[", "}": "{"}
	softLevel = map[string]bool{"!": true, "~": true, "<": true}
	endsSoft  = map[string]bool{"&&": true, "||": true, "=": true, ":": true, ";": true}
)

// guarded is the lexer with the checks the parser cannot make in its token
// stream, so that the parser sees an error before the input that would
// overflow its stack (nesting) or take time quadratic in its length (an
// unclosed `/*`, which the Comment rule would scan to the end for at
// every later `/*`).
type guarded struct{ lexer.Definition }

func (d guarded) Lex(name string, r io.Reader) (lexer.Lexer, error) {
	lx, err := d.Definition.Lex(name, r)
	if err != nil {
		return nil, err
	}
	return &guardLexer{Lexer: lx, unclosed: d.Symbols()["Unclosed"]}, nil
}

// guardLexer keeps the open levels, innermost last; there are never more
// than maxNesting, so the check costs constant memory.
type guardLexer struct {
	lexer.Lexer
	unclosed lexer.TokenType
	open     []string
}

func (l *guardLexer) Next() (lexer.Token, error) {
	t, err := l.Lexer.Next()
	if err != nil {
		return t, err
	}
	if t.Type == l.unclosed {
		return t, &lexer.Error{Pos: t.Pos, Msg: "comment /* is not closed"}
	}
	switch v := t.Value; {
	case v == "(" || v == "[" || v == "{" || softLevel[v]:
		if len(l.open) == maxNesting {
			return t, &lexer.Error{Pos: t.Pos, Msg: fmt.Sprintf("nested more than %d levels deep (brackets, !, ~ and < count)", maxNesting)}
		}
		l.open = append(l.open, v)
	case closerOf[v] != "":
		l.endSoft()
		if n := len(l.open); n > 0 && l.open[n-1] == closerOf[v] {
			l.open = l.open[:n-1]
		}
	case v == ">":
		if n := len(l.open); n > 0 && l.open[n-1] == "<" {
			l.open = l.open[:n-1]
		}
	case endsSoft[v]:
		l.endSoft()
	}
	return t, nil
}

// endSoft closes the soft levels innermost.
func (l *guardLexer) endSoft() {
	for n := len(l.open); n > 0 && softLevel[l.open[n-1]]; n-- {
		l.open = l.open[:n-1]
	}
}
