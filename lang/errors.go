package lang

import (
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/dragonet-go/nsc/internal/errlist"
)

// Error is a model error at a position, printed `file:line:col: message`.
type Error struct {
	Pos lexer.Position
	Msg string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.Pos.Filename, e.Pos.Line, e.Pos.Column, excerpt(e.Msg))
}

// maxMessage bounds what an error quotes of the input: a message naming
// a 5 MB identifier says how long it is instead.
const maxMessage = 400

func excerpt(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes more)", msg[:cut], len(msg)-cut)
}

// ErrorList is every error found, in source order.
type ErrorList = errlist.List[*Error]

// sortErrors orders l by position.
func sortErrors(l ErrorList) ErrorList {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return l
}

// errorf records an error; the loader keeps going to report more than one.
func (l *loader) errorf(pos lexer.Position, format string, args ...any) {
	l.errs = append(l.errs, &Error{pos, fmt.Sprintf(format, args...)})
}

// posString formats a position for dataflow, which does not import lexer.
func posString(p lexer.Position) string {
	return fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column)
}
