package cp

// SetMaxSamples lowers the Timeseries sample bound for a test; the
// returned function restores it.
func SetMaxSamples(n int) (restore func()) {
	old := maxSamples
	maxSamples = n
	return func() { maxSamples = old }
}

// Migrations are the schema migrations, for tests that build an old
// database.
var Migrations = migrations
