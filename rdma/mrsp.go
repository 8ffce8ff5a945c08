package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// NAAICE's memory region setup protocol (MRSP, seed 002): two-sided
// SENDs of a 4-byte header (type, count, padding) and count entries.
const (
	MRSPError            = 0x00 // header only: the count byte is the error code
	MRSPAdvertiseRequest = 0x01 // the client's regions and what it asks for on the FPGA
	MRSPAdvertise        = 0x02 // the server's regions
	// The error codes of an MRSPError.
	MRSPNoMemory       = 0x01 // address + size past the end of the FPGA's memory
	MRSPInvalidAddress = 0x02 // the address is outside it
	MRSPTooManyRegions = 0x03
	// MaxRegions is what the FPGA holds; a message may carry 256.
	MaxRegions = 32
	// MaxRegionSize is InfiniBand's longest message, NAAICE's largest region.
	MaxRegionSize = 2 << 30
	mrspHeaderLen = 4
	requestLen    = 24 // flags 8, FPGA address 56, published address 64, R_Key 32, size 32
	adLen         = 16 // address 64, R_Key 32, size 32
)

// MR is a region as MRSP publishes it: where it is, its R_Key, its size.
type MR struct {
	Addr uint64
	RKey uint32
	Size uint32
}

// MRRequest is one entry of an Advertisement and Request: a region of the
// client (for the results) and the FPGA address where it asks for one of
// the same size (for its input).
type MRRequest struct {
	Flags    uint8
	FPGAAddr uint64 // 56 bits
	MR
}

// AppendAdvertiseRequest appends an Advertisement and Request message.
func AppendAdvertiseRequest(b []byte, rs []MRRequest) []byte {
	b = append(b, MRSPAdvertiseRequest, byte(len(rs)), 0, 0)
	for _, r := range rs {
		b = binary.BigEndian.AppendUint64(b, uint64(r.Flags)<<56|r.FPGAAddr&(1<<56-1))
		b = appendMR(b, r.MR)
	}
	return b
}

// AppendAdvertise appends an Advertisement message.
func AppendAdvertise(b []byte, ms []MR) []byte {
	b = append(b, MRSPAdvertise, byte(len(ms)), 0, 0)
	for _, m := range ms {
		b = appendMR(b, m)
	}
	return b
}

// AppendMRSPError appends an Error message with its code.
func AppendMRSPError(b []byte, code uint8) []byte { return append(b, MRSPError, code, 0, 0) }

func appendMR(b []byte, m MR) []byte {
	b = binary.BigEndian.AppendUint64(b, m.Addr)
	b = binary.BigEndian.AppendUint32(b, m.RKey)
	return binary.BigEndian.AppendUint32(b, m.Size)
}

// MRSP is a parsed message: its type and, by type, the requests, the
// regions or the error code.
type MRSP struct {
	Type     uint8
	Requests []MRRequest
	Regions  []MR
	Code     uint8
}

// ErrMRSP is a message that is not MRSP: too short for its count, or of
// an unknown type.
var ErrMRSP = errors.New("rdma: not an MRSP message")

// ParseMRSP reads an MRSP message.
func ParseMRSP(msg []byte) (MRSP, error) {
	if len(msg) < mrspHeaderLen {
		return MRSP{}, fmt.Errorf("%w: %d bytes", ErrMRSP, len(msg))
	}
	m, n := MRSP{Type: msg[0]}, int(msg[1])
	body := msg[mrspHeaderLen:]
	mr := func(b []byte) MR {
		return MR{Addr: binary.BigEndian.Uint64(b), RKey: binary.BigEndian.Uint32(b[8:]), Size: binary.BigEndian.Uint32(b[12:])}
	}
	switch m.Type {
	case MRSPError:
		m.Code = msg[1]
	case MRSPAdvertiseRequest:
		if len(body) < n*requestLen {
			return MRSP{}, fmt.Errorf("%w: %d requests in %d bytes", ErrMRSP, n, len(body))
		}
		for i := range n {
			e := body[i*requestLen:]
			w := binary.BigEndian.Uint64(e)
			m.Requests = append(m.Requests, MRRequest{Flags: uint8(w >> 56), FPGAAddr: w & (1<<56 - 1), MR: mr(e[8:])})
		}
	case MRSPAdvertise:
		if len(body) < n*adLen {
			return MRSP{}, fmt.Errorf("%w: %d regions in %d bytes", ErrMRSP, n, len(body))
		}
		for i := range n {
			m.Regions = append(m.Regions, mr(body[i*adLen:]))
		}
	default:
		return MRSP{}, fmt.Errorf("%w: type %#x", ErrMRSP, m.Type)
	}
	return m, nil
}
