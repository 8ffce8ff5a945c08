package cp

import (
	"net/netip"
	"slices"
	"time"
)

// syncTarget is the reservation a sync message to instance i from
// address from at now is for, or the reason it is dropped: the instance
// has no (unexpired) reservation, or from is not one of its senders (an
// IPv4-mapped address is its IPv4 one).
func (s *Store) syncTarget(i int, from netip.Addr, now time.Time) (int64, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, r := range s.res {
		if r.Instance != i || r.Expired(now) {
			continue
		}
		from = from.Unmap()
		if !slices.ContainsFunc(r.Senders, func(a string) bool {
			ip, err := netip.ParseAddr(a)
			return err == nil && ip.Unmap().WithZone("") == from.WithZone("")
		}) {
			return 0, notSender
		}
		return r.ID, ""
	}
	return 0, unreserved
}
