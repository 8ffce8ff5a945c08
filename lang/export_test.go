package lang

// What the external tests read of unexported state.
const MaxModelBytes = maxModelBytes

// Files are the files m was read from, includes first.
func Files(m *Model) []string { return m.files }
