package main

// The targets nsc compile offers: each registers itself with backends
// (backends.Register); a new one is a package and a line here.
import (
	_ "github.com/dragonet-go/nsc/backends/golang"
	_ "github.com/dragonet-go/nsc/backends/p4"
	_ "github.com/dragonet-go/nsc/backends/xdp"
)
