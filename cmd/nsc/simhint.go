package main

import (
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/lang"
)

// lbHeadedHint explains a reassembler run without tables on segments
// that still carry the EJFAT LB header: the model takes that header only
// on the ports its data_ports table marks keep_lb (by default none), and
// drops the rest as bad RE headers. "" when it does not apply.
func lbHeadedHint(m *lang.Model, frames []pcapio.Frame, tables string) string {
	if _, ok := m.Schema.Table("data_ports"); !ok || tables != "" {
		return ""
	}
	n, lo, hi := 0, uint16(0xffff), uint16(0)
	for _, f := range frames {
		p := gopacket.NewPacket(f.Data, layers.LayerTypeEthernet, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if !ok || len(udp.Payload) < 4 || ejfat.LBHeader(udp.Payload).Magic() != ejfat.LBMagic {
			continue
		}
		n++
		lo, hi = min(lo, uint16(udp.DstPort)), max(hi, uint16(udp.DstPort))
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("nsc sim: hint: %d of %d frames carry an EJFAT LB header (magic \"LB\") before the RE header; "+
		"the model takes it only on ports its data_ports table marks keep_lb, so give --tables with\n"+
		"  table_add data_ports keep_lb %d->%d => 1\n", n, len(frames), lo, hi)
}
