package backends

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// Registration plugs a target into nsc compile: its name, its own flags,
// the files it writes and what runs after it. A target package registers
// itself in an init function; nsc compile and its help list what is
// registered.
type Registration struct {
	Name string
	// Generates says what, for help: "a Go package".
	Generates string
	// Device: the target programs a device. When the PRG runs only part
	// of the graph (embed.Embedding.Device), the target gets that part
	// and a Go host part (host/) runs the whole graph on what it passes.
	Device bool
	// Flags declares the target's own flags on fs (nsc compile refuses
	// them with another target) and returns what makes the job once the
	// command line is parsed.
	Flags func(fs *flag.FlagSet) func(Request) (Job, error)
	// Post, if not nil, runs on the artifacts once written into dir (XDP:
	// clang compiles the program); it says what it did on log.
	Post func(dir string, arts []Artifact, log io.Writer) error
}

// Request is what nsc compile asks of a target: the model files, the
// LPG and the PRG (none: the LPG alone), the output directory
// (slash-separated, as generated headers name it).
type Request struct {
	Files    []string
	LPG, PRG string
	Out      string
}

// Command is the nsc compile command line of r with a target's own flags
// (extra, --target included), for a generated file's header.
func (r Request) Command(extra ...string) string {
	cmd := append([]string{"nsc compile"}, r.Files...)
	cmd = append(cmd, "--lpg", r.LPG)
	if r.PRG != "" {
		cmd = append(cmd, "--prg", r.PRG)
	}
	return strings.Join(append(append(cmd, extra...), "-o", r.Out), " ")
}

// Job is one run of a target: the target, the files its flags read
// (which its outputs may not overwrite) and the files it writes,
// relative to the output directory.
type Job struct {
	Target  Target
	Inputs  []string
	Outputs []string
}

// UsageError is a target's complaint about its flags.
type UsageError string

func (e UsageError) Error() string { return string(e) }

var registry struct {
	sync.Mutex
	targets map[string]Registration
}

// Register adds target r; it returns what removes it again (for a test's
// target). A second target of the same name is a bug.
func Register(r Registration) (unregister func()) {
	registry.Lock()
	defer registry.Unlock()
	if r.Name == "" || r.Flags == nil {
		panic("backends: Register: a target needs a name and flags")
	}
	if _, dup := registry.targets[r.Name]; dup {
		panic(fmt.Sprintf("backends: Register: target %s registered twice", r.Name))
	}
	if registry.targets == nil {
		registry.targets = map[string]Registration{}
	}
	registry.targets[r.Name] = r
	return func() {
		registry.Lock()
		defer registry.Unlock()
		delete(registry.targets, r.Name)
	}
}

// Registered returns the targets registered, by name.
func Registered() []Registration {
	registry.Lock()
	defer registry.Unlock()
	rs := make([]Registration, 0, len(registry.targets))
	for _, r := range registry.targets {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b Registration) int { return strings.Compare(a.Name, b.Name) })
	return rs
}
