package dot_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"slices"
	"strings"
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

// svgGroup is a node or cluster of Graphviz's SVG: <g class="node"> with
// its <title>, the lines of its label and the fill of its shape.
type svgGroup struct {
	Class string   `xml:"class,attr"`
	Title string   `xml:"title"`
	Texts []string `xml:"text"`
	Fills []shape  `xml:"polygon"`
}

type shape struct {
	Fill string `xml:"fill,attr"`
}

// shippedEmbeddings are the embeddings the README and docs show.
var shippedEmbeddings = []struct {
	files    []string
	lpg, prg string
}{
	{[]string{"inet/offload.nsc"}, "UDPIPv4", "I82599"},
	{[]string{"dragonet/offload.nsc"}, "IPStack", "IPNicRx"},
	{[]string{"dragonet/offload.nsc"}, "IPStack", "IPNicTx"},
	{[]string{"ejfat/reassembler.nsc", "ejfat/rdma.nsc"}, "Reassembler", "RDMA"},
	{[]string{"ejfat/lb-2025.nsc", "ejfat/cx6dx-lb.nsc"}, "LB2025", "CX6DxLB"},
	{[]string{"ejfat/lb-2026.nsc"}, "LB2026", "XDPSmall"},
	{[]string{"ejfat/lb-2026.nsc"}, "LB2026", "BMv2Small"},
	{[]string{"ejfat/lb-2021.nsc"}, "LB2021", "LinuxUDP"},
}

// TestEmbeddedPictures renders every shipped embedding through Graphviz
// and reads the SVG back: the legend holds a sample of every fill the
// nodes use; each hardware node doing LPG work names the LPG nodes the
// embedding placed on it; every pruned LPG node is there, faint, with
// its reason; in a split, the LPG nodes the device runs are filled apart
// from those the host runs.
func TestEmbeddedPictures(t *testing.T) {
	for _, c := range shippedEmbeddings {
		t.Run(c.lpg+"-in-"+c.prg, func(t *testing.T) {
			m := testutil.Model(t, c.files...)
			l, _ := m.Graph(c.lpg)
			p, _ := m.Graph(c.prg)
			em, err := embed.Embed(l, p)
			if err != nil {
				t.Fatal(err)
			}
			var src bytes.Buffer
			if err := dot.Write(&src, em.Graph, dot.EmbeddingOptions(em)); err != nil {
				t.Fatal(err)
			}
			svg, err := dot.SVG(src.Bytes())
			if errors.Is(err, dot.ErrNoGraphviz) {
				t.Skipf("skipping: %v (apt-get install graphviz)", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			nodes, clusters := readSVG(t, svg)
			byLabel := map[string]svgGroup{} // by the label's first line
			fillsUsed := map[string]bool{}
			for _, n := range nodes {
				if len(n.Texts) > 0 {
					byLabel[n.Texts[0]] = n
				}
				if f := fill(n); f != "" && f != "none" {
					fillsUsed[f] = true
				}
			}
			if !slices.Contains(clusters, "legend") {
				t.Fatalf("no legend cluster (clusters %v)", clusters)
			}
			// The legend's samples are the nodes that are neither a node
			// of the graph nor a pruned one nor the end of an edge.
			drawn := map[string]bool{"": true, "…": true}
			for _, n := range em.Graph.Nodes {
				drawn[n.Name] = true
			}
			for _, pl := range em.Placements {
				drawn[pl.Node] = true
			}
			legendFills := map[string]bool{}
			for label, n := range byLabel {
				if !drawn[label] {
					legendFills[fill(n)] = true
				}
			}
			for f := range fillsUsed {
				if !legendFills[f] {
					t.Errorf("fill %s is used but not in the legend (it has %v)", f, legendFills)
				}
			}
			for _, pl := range em.Placements {
				switch {
				case pl.Hardware != "":
					for _, name := range strings.Split(pl.Hardware, ", ") {
						hw, ok := byLabel[name]
						if !ok || !slices.ContainsFunc(hw.Texts, func(s string) bool { return strings.Contains(s, pl.Node) }) {
							t.Errorf("hardware %s does LPG %s; its label is %q", name, pl.Node, hw.Texts)
						}
					}
				case pl.Kind == embed.Pruned:
					g, ok := byLabel[pl.Node]
					if !ok || len(g.Texts) < 2 || !strings.HasPrefix(g.Texts[1], "pruned: ") {
						t.Errorf("pruned %s: drawn as %q", pl.Node, g.Texts)
					}
				}
			}
			if em.Device == nil {
				return
			}
			device, host := 0, 0
			for _, n := range em.Graph.Nodes {
				if em.Origin[n.Name].LPG == "" {
					continue
				}
				want := dot.ColourLPG
				if em.Device.Node(n.Name) != nil {
					want, device = dot.ColourDevice, device+1
				} else {
					host++
				}
				if got := fill(byLabel[n.Name]); got != want {
					t.Errorf("%s: fill %q, want %q", n.Name, got, want)
				}
			}
			if device == 0 || host == 0 {
				t.Errorf("split with %d device and %d host LPG nodes", device, host)
			}
		})
	}
}

func fill(n svgGroup) string {
	if len(n.Fills) == 0 {
		return ""
	}
	return n.Fills[0].Fill
}

// readSVG returns the SVG's nodes and its clusters' labels.
func readSVG(t *testing.T, svg []byte) ([]svgGroup, []string) {
	t.Helper()
	var doc struct {
		Groups []struct {
			Groups []svgGroup `xml:"g"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("SVG: %v", err)
	}
	var nodes []svgGroup
	var clusters []string
	for _, top := range doc.Groups {
		for _, g := range top.Groups {
			switch {
			case g.Class == "node":
				nodes = append(nodes, g)
			case g.Class == "cluster" && len(g.Texts) > 0:
				clusters = append(clusters, g.Texts[0])
			}
		}
	}
	return nodes, clusters
}
