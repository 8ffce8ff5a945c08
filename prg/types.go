package prg

import (
	"fmt"
	"strconv"
	"strings"
)

// TypeKind is what a C-node's type means.
type TypeKind uint8

const (
	Bool TypeKind = iota
	Enum
	Filters // list<filter5,N>
)

// Type is a C-node's declared type, resolved.
type Type struct {
	Kind TypeKind
	// N is the number of choices of an enum, the capacity of a filter list.
	N int
}

func (t Type) String() string {
	switch t.Kind {
	case Bool:
		return "bool"
	case Enum:
		return fmt.Sprintf("enum<%d>", t.N)
	}
	return fmt.Sprintf("list<filter5,%d>", t.N)
}

// known lists the types with a meaning, for messages.
const known = "bool, enum<N>, list<filter5,N>"

// ParseType resolves a type as the loader prints it ("list<filter5,128>").
func ParseType(s string) (Type, error) {
	name, args := s, ""
	if i := strings.IndexByte(s, '<'); i >= 0 && strings.HasSuffix(s, ">") {
		name, args = s[:i], s[i+1:len(s)-1]
	}
	count := func(a string) (int, bool) {
		n, err := strconv.Atoi(a)
		return n, err == nil && n > 0
	}
	switch {
	case name == "bool" && args == "":
		return Type{Kind: Bool, N: 2}, nil
	case name == "enum":
		if n, ok := count(args); ok {
			return Type{Kind: Enum, N: n}, nil
		}
	case name == "list" && strings.HasPrefix(args, "filter5,"):
		if n, ok := count(strings.TrimPrefix(args, "filter5,")); ok {
			return Type{Kind: Filters, N: n}, nil
		}
	}
	return Type{}, fmt.Errorf("type %s has no meaning as a configuration (known: %s)", s, known)
}
