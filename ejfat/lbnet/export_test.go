package lbnet

// Frame frames a datagram as a worker does, for the in-memory baseline.
var Frame = frameOf
