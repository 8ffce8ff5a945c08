package cp

import "fmt"

// Open refuses a database whose rows the CP could not work from (see
// TestCorruptRows): a token's hash not 32 bytes, its parent missing or a
// cycle of parents (indexTokens), a calendar not of Slots ids, epochs
// out of order (checkEpoch), values of the wrong type (Scan); New refuses
// a reservation on an instance it does not serve.

// checkEpoch checks epoch e of LB id, loaded after es, whose calendar was
// calBytes long: Slots session ids, and a number and boundary above the
// last epoch's, as AddEpoch stores them.
func checkEpoch(id int64, es []Epoch, e Epoch, calBytes int) error {
	if calBytes != 8*Slots {
		return fmt.Errorf("LB %d, epoch %d: a calendar of %d bytes, not %d", id, e.Number, calBytes, 8*Slots)
	}
	if n := len(es); n > 0 && (e.Number <= es[n-1].Number || e.Boundary <= es[n-1].Boundary) {
		return fmt.Errorf("LB %d: epoch %d from event %d after epoch %d from %d", id, e.Number, e.Boundary, es[n-1].Number, es[n-1].Boundary)
	}
	return nil
}
