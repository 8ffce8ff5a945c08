package errlist_test

import (
	"errors"
	"io"
	"io/fs"
	"testing"

	"github.com/dragonet-go/nsc/internal/errlist"
)

func TestList(t *testing.T) {
	var none errlist.List[error]
	if none.Err() != nil {
		t.Errorf("empty list: %v, want nil", none.Err())
	}
	one := errlist.List[error]{io.EOF}
	if one.Err() != io.EOF {
		t.Errorf("one: %v, want io.EOF itself", one.Err())
	}
	two := errlist.List[error]{io.EOF, fs.ErrNotExist}
	err := two.Err()
	if got, want := err.Error(), "EOF\nfile does not exist"; got != want {
		t.Errorf("two: %q, want %q", got, want)
	}
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("errors.Is does not look through the list")
	}
}
