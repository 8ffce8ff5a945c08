package wireshark

import (
	"io/fs"
	"os"
	"testing"
	"testing/fstest"

	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
)

// Any model that loads gives a dissector or an error, never a panic: with
// its own choice of headers, and with every wire header Wireshark does not
// dissect itself named.
func FuzzGenerate(f *testing.F) {
	for _, name := range []string{"testdata/shapes.nsc"} {
		src, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	f.Add("include \"lib/inet.nsc\"\nheader h { a: 3  b: 61  c: 1  d: 7  e: 128  n: 8  v: bytes(n - 2) }\nnext udp.sport { 7 -> h }\nnext h.a { 1 -> ipv4, default -> h }\n")
	f.Fuzz(func(t *testing.T, src string) {
		fsys := fstest.MapFS{"m.nsc": {Data: []byte(src)}}
		m, err := lang.Loader{ReadFile: func(n string) ([]byte, error) { return fs.ReadFile(fsys, n) }, Library: models.FS}.Load("m.nsc")
		if err != nil {
			return
		}
		Generate(m, Options{})
		var all []string
		for _, h := range m.Schema.Headers {
			if !h.Metadata && h.FixedBytes() > 0 && !native(h) {
				all = append(all, h.Name)
			}
		}
		if len(all) > 0 {
			if _, err := Generate(m, Options{Headers: all}); err != nil {
				t.Logf("every header: %v", err)
			}
		}
	})
}
