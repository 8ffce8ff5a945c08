package main

import (
	"os"
	"path/filepath"

	"github.com/dragonet-go/nsc/internal/fileout"
)

// refuseOverwrite refuses a command line whose outputs would overwrite one
// of its inputs, or each other. Empty names are flags not given.
func refuseOverwrite(inputs []string, outputs ...string) error {
	named := map[string]string{}
	var existing []string
	for _, out := range outputs {
		if out == "" {
			continue
		}
		if err := fileout.NotInput(out, inputs...); err != nil {
			return usagef("%v", err)
		}
		clean := filepath.Clean(out)
		if first, ok := named[clean]; ok {
			return usagef("%s and %s are the same output file", first, out)
		}
		named[clean] = out
		if _, err := os.Stat(out); err != nil {
			continue
		}
		for _, prev := range existing {
			if fileout.NotInput(out, prev) != nil {
				return usagef("%s and %s are the same output file", prev, out)
			}
		}
		existing = append(existing, out)
	}
	return nil
}
