package lang

import (
	"github.com/dragonet-go/nsc/lang/internal/syntax"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/dragonet-go/nsc/prg"
)

// A configuration file gives C-nodes their values, one `NODE = LITERAL`
// each (NODE with its cluster prefix, as in reports), comments as in models.
type configFile struct {
	Entries []*configEntry `parser:"@@*"`
}

type configEntry struct {
	Pos   lexer.Position
	Name  string          `parser:"@Ident '='"`
	Value *syntax.Literal `parser:"@@"`
}

var configParser = participle.MustBuild[configFile](
	participle.Lexer(syntax.Lexer),
	participle.Elide("Comment", "Whitespace"),
	participle.UseLookahead(4),
)

// ParseConfig reads a configuration file; errors are file:line:col.
func ParseConfig(name string, src []byte) (prg.Values, error) {
	f, err := configParser.ParseBytes(name, src)
	if err != nil {
		return nil, syntaxError(err)
	}
	vals := prg.Values{}
	for _, e := range f.Entries {
		if _, dup := vals[e.Name]; dup {
			return nil, ErrorList{{e.Pos, "config " + e.Name + " given twice"}}
		}
		vals[e.Name] = literal(e.Value)
	}
	return vals, nil
}
