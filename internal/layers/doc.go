// Package layers holds no code: its test states the order of nsc's
// packages, from the packet IR up to the CLI, and fails when a package
// imports one above it or an application imports a code generator.
package layers
