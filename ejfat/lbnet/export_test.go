package lbnet

// Frame frames a datagram as a worker does, for the in-memory baseline.
var Frame = frameOf

// SegmentedSends and CoalescedReceives are the UDP_SEGMENT messages lb's
// workers sent and the UDP_GRO ones they received.
func SegmentedSends(lb *LB) (n uint64) {
	for _, w := range lb.workers {
		n += w.out.Segmented
	}
	return n
}

func CoalescedReceives(lb *LB) (n uint64) {
	for _, w := range lb.workers {
		n += w.count.coalesced.Load()
	}
	return n
}
