package packet

import (
	"fmt"
	"strconv"
	"strings"
)

// FieldSpec is one field of a header: Width bits at Offset bits from the
// header start, most significant bit first. A variable-length field (IPv4
// options) has Width 0 and a Length expression giving its size in bytes; it
// must be the last field, so every other offset stays static.
type FieldSpec struct {
	Name   string
	Offset int
	Width  int
	Length *Expr
}

// Variable reports whether the field's size depends on the packet.
func (f *FieldSpec) Variable() bool { return f.Length != nil }

// ChecksumKind says what a header's checksum field covers.
type ChecksumKind uint8

const (
	// ChecksumNone: the header has no checksum.
	ChecksumNone ChecksumKind = iota
	// ChecksumHeader covers the header bytes only (IPv4).
	ChecksumHeader
	// ChecksumMessage covers the header and everything after it, to the end
	// of the IP payload when an IP header is valid (ICMPv4).
	ChecksumMessage
	// ChecksumL4 covers the header and everything after it, plus the IP
	// pseudo-header when an ipv4 or ipv6 header is valid (UDP, TCP).
	ChecksumL4
)

// HeaderSpec is a header layout. Metadata headers are not on the wire; their
// fields live in Packet.Meta starting at MetaBase.
type HeaderSpec struct {
	Name     string
	ID       int
	Fields   []FieldSpec
	Metadata bool
	MetaBase int

	// Checksum is the index of the checksum field, or -1.
	Checksum     int
	ChecksumKind ChecksumKind
	// ChecksumOptional: a zero checksum means "not computed" (UDP over IPv4).
	ChecksumOptional bool
}

// FixedBytes is the size of the header without its variable field.
func (h *HeaderSpec) FixedBytes() int {
	bits := 0
	for i := range h.Fields {
		if end := h.Fields[i].Offset + h.Fields[i].Width; end > bits {
			bits = end
		}
	}
	return (bits + 7) / 8
}

// Field returns the index of the named field.
func (h *HeaderSpec) Field(name string) (int, bool) {
	for i := range h.Fields {
		if h.Fields[i].Name == name {
			return i, true
		}
	}
	return -1, false
}

// LayoutField is one entry of a one-line layout.
type LayoutField struct {
	Name  string
	Width int
}

// ParseLayout reads the one-line header form of seed 000,
// 'L:8,B:8,Version:8,Protocol:8,Reserved:16,Entropy:16,Tick:64'.
// A '-' in a name (Data-ID) becomes '_' so the field can be named in
// expressions.
func ParseLayout(s string) ([]LayoutField, error) {
	var out []LayoutField
	seen := map[string]bool{}
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, width, ok := strings.Cut(part, ":")
		name, width = strings.TrimSpace(name), strings.TrimSpace(width)
		if !ok || name == "" || width == "" {
			return nil, fmt.Errorf("layout field %d %q: want NAME:BITS", i+1, part)
		}
		w, err := strconv.Atoi(width)
		if err != nil || w < 1 || w > 128 {
			return nil, fmt.Errorf("layout field %q: width %q is not a number of bits in 1..128", name, width)
		}
		name = strings.ReplaceAll(name, "-", "_")
		if seen[name] {
			return nil, fmt.Errorf("layout field %q appears twice", name)
		}
		seen[name] = true
		out = append(out, LayoutField{name, w})
	}
	return out, nil
}
