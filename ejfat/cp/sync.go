package cp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/dragonet-go/nsc/ejfat"
)

// Why a sync datagram is dropped (the reason label of the malformed count).
const (
	badLength  = "length"
	badMagic   = "magic"
	badVersion = "version"
	unreserved = "unreserved" // well-formed, but the instance has no reservation
	notSender  = "sender"     // well-formed, but not from one of the reservation's senders
)

// parseSync decodes a sync message (ejfat-reassembly.md §2): "LC",
// version 2, a reserved byte, source id, event number, rate in Hz, the
// sender's Unix time in ns. It returns the reason a datagram is refused.
func parseSync(b []byte) (SyncSample, string) {
	m := ejfat.Sync(b)
	switch {
	case len(b) != ejfat.SyncLen:
		return SyncSample{}, badLength
	case m.Magic() != ejfat.SyncMagic:
		return SyncSample{}, badMagic
	case m.Version() != ejfat.SyncVersion:
		return SyncSample{}, badVersion
	}
	return SyncSample{Source: m.SourceID(), Event: m.EventNumber(), Rate: m.Rate(), SenderTime: int64(m.UnixNano())}, ""
}

// syncConn is one socket of instance's sync server.
type syncConn struct {
	instance int
	conn     *net.UDPConn
}

// listenSync opens instance i's sync server on SyncIPv4 at SyncPort+i (or
// any free port) and, when SyncIPv6 is set, on SyncIPv6 at the same port.
func (c *CP) listenSync() error {
	for i := range c.cfg.Instances {
		port := 0
		if c.cfg.SyncPort != 0 {
			port = c.cfg.SyncPort + i
		}
		for _, ip := range []string{c.cfg.SyncIPv4, c.cfg.SyncIPv6} {
			if ip == "" {
				continue
			}
			conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip), Port: port})
			if err != nil {
				c.closeSync()
				return fmt.Errorf("sync server of instance %d: %w", i, err)
			}
			c.sync = append(c.sync, syncConn{i, conn})
			port = conn.LocalAddr().(*net.UDPAddr).Port
		}
	}
	return nil
}

func (c *CP) closeSync() {
	for _, s := range c.sync {
		s.conn.Close()
	}
}

// syncPort is the UDP port of instance i's sync server.
func (c *CP) syncPort(i int) uint32 {
	for _, s := range c.sync {
		if s.instance == i {
			return uint32(s.conn.LocalAddr().(*net.UDPAddr).Port)
		}
	}
	return 0
}

// serveSync stores the sync messages instance i receives until conn closes.
func (c *CP) serveSync(i int, conn *net.UDPConn) {
	buf := make([]byte, 2048) // larger than a sync message, to see oversized ones
	inst := strconv.Itoa(i)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		x, bad := parseSync(buf[:n])
		if bad == "" {
			x.Time = c.cfg.Now()
			bad = c.storeSync(i, x, from.Addr())
		}
		if bad != "" {
			c.metrics.syncDropped.WithLabelValues(inst, bad).Inc()
		}
	}
}

// storeSync stores x, from address from, for instance i's reservation.
func (c *CP) storeSync(i int, x SyncSample, from netip.Addr) string {
	id, bad := c.store.syncTarget(i, from, x.Time)
	if bad != "" {
		return bad
	}
	c.logErr("store sync sample", c.store.AddSync(id, x))
	c.metrics.syncSamples.WithLabelValues(lbLabel(id)).Inc()
	return ""
}
