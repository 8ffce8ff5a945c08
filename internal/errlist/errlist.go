// Package errlist is the one shape of "several errors, one per line" that
// the model loader, the graph checks and the backends' refusals share.
package errlist

import "strings"

// List is several errors of one kind; it is an error itself, one line
// each, and errors.Is/As look through it.
type List[E error] []E

func (l List[E]) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (l List[E]) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// Err is nil for an empty list, its error for one, else the list.
func (l List[E]) Err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return l
}
