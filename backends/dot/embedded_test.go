package dot_test

import (
	"testing"

	"github.com/dragonet-go/nsc/backends/dot"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// The embedded picture marks what came from the LPG, the hardware that
// took over LPG work, and the residual guard of a split stage.
func TestEmbeddingOptions(t *testing.T) {
	m := testutil.Model(t, "inet/offload.nsc")
	l, _ := m.Graph("UDPIPv4")
	p, _ := m.Graph("I82599")
	em, err := embed.Embed(l, p)
	if err != nil {
		t.Fatal(err)
	}
	hl := dot.EmbeddingOptions(em).Highlight
	for node, want := range map[string]string{
		"TxIPCsum":           dot.ColourTookOver, // does TxIPv4Csum's work
		"TxUDPCsum":          dot.ColourTookOver, // does TxUDPCsum's work for IPv4 without options
		"TxUDPCsum@lpg":      dot.ColourLPG,      // stays for the rest
		"TxUDPCsum@lpgGuard": dot.ColourGuard,
		"RxDemux":            dot.ColourLPG,
		"RxL4CS":             "", // PRG hardware doing only its own work
	} {
		if hl[node] != want {
			t.Errorf("%s: %q, want %q", node, hl[node], want)
		}
	}
}
