package cp

import (
	"encoding/binary"
	"errors"
	"net"
	"strconv"
)

// syncLen is the size of an EJFAT sync message.
const syncLen = 28

// Why a sync datagram is dropped (the reason label of the malformed count).
const (
	badLength  = "length"
	badMagic   = "magic"
	badVersion = "version"
	unreserved = "unreserved" // well-formed, but the instance has no reservation
)

// parseSync decodes a sync message (ejfat-reassembly.md §2): "LC",
// version 2, a reserved byte, source id, event number, rate in Hz, the
// sender's Unix time in ns. It returns the reason a datagram is refused.
func parseSync(b []byte) (SyncSample, string) {
	switch {
	case len(b) != syncLen:
		return SyncSample{}, badLength
	case b[0] != 'L' || b[1] != 'C':
		return SyncSample{}, badMagic
	case b[2] != 2:
		return SyncSample{}, badVersion
	}
	return SyncSample{
		Source:     binary.BigEndian.Uint32(b[4:]),
		Event:      binary.BigEndian.Uint64(b[8:]),
		Rate:       binary.BigEndian.Uint32(b[16:]),
		SenderTime: int64(binary.BigEndian.Uint64(b[20:])),
	}, ""
}

// listenSync opens one UDP socket per instance on SyncIPv4.
func (c *CP) listenSync() error {
	for i := range c.cfg.Instances {
		port := 0
		if c.cfg.SyncPort != 0 {
			port = c.cfg.SyncPort + i
		}
		conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(c.cfg.SyncIPv4), Port: port})
		if err != nil {
			c.closeSync()
			return err
		}
		c.sync = append(c.sync, conn)
	}
	return nil
}

func (c *CP) closeSync() {
	for _, conn := range c.sync {
		conn.Close()
	}
}

// syncPort is the UDP port of instance i's sync server.
func (c *CP) syncPort(i int) uint32 {
	return uint32(c.sync[i].LocalAddr().(*net.UDPAddr).Port)
}

// serveSync stores the sync messages instance i receives until conn closes.
func (c *CP) serveSync(i int, conn *net.UDPConn) {
	buf := make([]byte, 2048) // larger than a sync message, to see oversized ones
	inst := strconv.Itoa(i)
	for {
		n, err := conn.Read(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		x, bad := parseSync(buf[:n])
		if bad == "" {
			x.Time = c.cfg.Now()
			bad = c.storeSync(i, x)
		}
		if bad != "" {
			c.metrics.syncDropped.WithLabelValues(inst, bad).Inc()
		}
	}
}

// storeSync stores x for instance i's reservation.
func (c *CP) storeSync(i int, x SyncSample) string {
	for _, r := range c.store.Reservations() {
		if r.Instance == i && !r.Expired(x.Time) {
			c.logErr("store sync sample", c.store.AddSync(r.ID, x))
			c.metrics.syncSamples.WithLabelValues(lbLabel(r.ID)).Inc()
			return ""
		}
	}
	return unreserved
}
