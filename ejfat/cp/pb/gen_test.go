package pb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// versionLine matches the tool versions protoc writes into the header; they
// may differ between machines without the code differing.
var versionLine = regexp.MustCompile(`(?m)^// (\t| - )protoc.*$`)

// TestGeneratedUpToDate regenerates the Go code from loadbalancer.proto and
// compares it with the checked-in files. It needs protoc, protoc-gen-go and
// protoc-gen-go-grpc; outside CI it skips without them.
func TestGeneratedUpToDate(t *testing.T) {
	path := os.Getenv("PATH")
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		path += string(os.PathListSeparator) + filepath.Join(string(bytes.TrimSpace(gopath)), "bin")
	}
	t.Setenv("PATH", path)
	for _, tool := range []string{"protoc", "protoc-gen-go", "protoc-gen-go-grpc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found: CI installs it (.ci/run)", tool)
			}
			t.Skipf("%s not found; install it to check the generated code", tool)
		}
	}
	// Reading the .proto here makes go test's cache depend on it.
	if _, err := os.ReadFile("loadbalancer.proto"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("protoc", "-I", ".", "--go_out="+dir, "--go_opt=paths=source_relative",
		"--go-grpc_out="+dir, "--go-grpc_opt=paths=source_relative", "loadbalancer.proto")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	for _, f := range []string{"loadbalancer.pb.go", "loadbalancer_grpc.pb.go"} {
		want, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(versionLine.ReplaceAll(got, nil), versionLine.ReplaceAll(want, nil)) {
			t.Errorf("%s is stale: run go generate ./ejfat/cp/pb", f)
		}
	}
}
