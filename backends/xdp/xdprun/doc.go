// Package xdprun runs the XDP programs backends/xdp generates: it
// compiles their C (Clang), loads an object into the kernel (Load: its
// Meta, read from the object, says which map holds which table and how,
// Layout), fills the maps from table entries, runs frames through the
// program (BPF_PROG_TEST_RUN) and reads its counters back as the
// interpreter's, attaches it to an interface, changes its maps entry by
// entry while frames run (Live), and pins it for other processes
// (Pin, OpenPinned). Applications (nsc xdp, the EJFAT control plane)
// import this, never the generator.
package xdprun
