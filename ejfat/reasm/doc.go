// Package reasm reassembles EJFAT events from their segments (spec
// ejfat-reassembly.md §4): the fast runtime the generated Go receive path
// and nsc recv call, the counterpart of the reference keyed-state
// operations in sim/.
//
// What goes in: segments, as UDP payloads behind the LB (RE header then
// payload, Datagram) or already decoded (Segment), each with the sender's
// address. An event is keyed by (sender address, data id, event number);
// its first segment takes a buffer of the event's length from a pool, and
// every segment is copied straight to its offset, in whatever order
// segments arrive. A record of the arrived byte ranges (Intervals by
// default, or a Bitmap) tells new bytes from repeated ones.
//
// What comes out: each complete event once, on a bounded queue the
// application reads with Dequeue and hands back with Release (its buffer
// goes back to the pool: no allocation per segment once the pool is warm).
// Counters (Stats) are the control plane's SendState counters and the
// segments by Reason; Fill is the queue's fill fraction.
//
// What is refused, each counted under its own Reason, nothing written: a
// datagram shorter than the RE header or with a bad version; an empty
// payload; an event length of 0 or above MaxEventSize; offset + payload
// beyond the length; a length other than the first segment's; bytes that
// arrived before (Duplicate, never copied or counted twice), or partly did
// (Overlap); segments of an event delivered (Duplicate) or dropped (Late)
// lately, so a finished event is never begun again. Incomplete events are
// dropped when their Timeout after the first segment passes (checked at
// each new event and each Expire) and, oldest first, when a new event
// would exceed MaxEvents or MaxBytes: memory stays bounded whatever lengths
// the first segments claim.
package reasm
