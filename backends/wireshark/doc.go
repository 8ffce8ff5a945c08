// Package wireshark generates Wireshark Lua dissectors for the headers a
// model declares.
//
// Every generated header becomes a Wireshark protocol named after it, with
// one field per header field, `<header>.<field>`: whole bytes as unsigned
// integers, bit fields as integers with a bitmask and 1-bit fields as
// booleans with a bitmask (so Wireshark draws them as it draws its own
// flags), fields wider than 64 bits as bytes, and a variable-length last
// field as bytes of its computed size.
//
// What follows a header, and when, comes from the model's parse structure:
// the `extract` nodes of its graphs (LPGs first) and the tests, switches
// and drops between one `extract` and the next, or else the `next` edges of
// the parse graph. A test or switch on the header's own fields becomes Lua
// code; an `extract` after it calls the next header's dissector; a `drop`
// on the way marks the packet malformed with the drop's reason. Where a
// header follows one Wireshark dissects itself (UDP, TCP, IP, Ethernet),
// the values of that header's port, protocol or EtherType field on the way
// register the dissector in Wireshark's table (udp.port, ip.proto, …); a
// header after UDP or TCP on any port becomes a heuristic dissector.
//
// The model language has no enumerations; the values it names are the
// cases of a `switch` (named by the header the case leads to, or else by
// the case's port) and the values of `next` edges. Those become value
// strings.
package wireshark
