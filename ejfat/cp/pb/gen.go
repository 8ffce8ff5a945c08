// Package pb is the EJFAT control plane's gRPC interface (loadbalancer.proto,
// wire-compatible with udplbd2) and the Go code protoc generates from it.
package pb

//go:generate protoc -I . --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative loadbalancer.proto
