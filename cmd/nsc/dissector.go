package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dragonet-go/nsc/backends/wireshark"
)

func runDissector(e *env, args []string) error {
	fs := newFlags("dissector", e)
	headers := fs.String("headers", "", "comma-separated headers to dissect (default: those the model parses after UDP or TCP, and what follows them)")
	out := fs.String("o", "", "output .lua file (default stdout)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	m, err := loadModel(files)
	if err != nil {
		return err
	}
	opt := wireshark.Options{Command: dissectorCommand(files, *headers, *out)}
	if *headers != "" {
		for _, h := range strings.Split(*headers, ",") {
			opt.Headers = append(opt.Headers, strings.TrimSpace(h))
		}
	}
	src, err := wireshark.Generate(m, opt)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err := e.stdout.Write(src)
		return err
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s\n", *out)
	return nil
}

// dissectorCommand is the command line that regenerates a dissector.
func dissectorCommand(files []string, headers, out string) string {
	cmd := []string{"nsc dissector"}
	for _, f := range files {
		cmd = append(cmd, filepath.ToSlash(f))
	}
	if headers != "" {
		cmd = append(cmd, "--headers", headers)
	}
	if out != "" {
		cmd = append(cmd, "-o", filepath.ToSlash(out))
	}
	return strings.Join(cmd, " ")
}
