package cp

// SetMaxSamples lowers the Timeseries sample bound for a test; the
// returned function restores it.
func SetMaxSamples(n int) (restore func()) {
	old := maxSamples
	maxSamples = n
	return func() { maxSamples = old }
}

// SetWALLimit lowers the WAL size past which a checkpoint truncates it;
// the returned function restores it.
func SetWALLimit(n int64) (restore func()) {
	old := walLimit
	walLimit = n
	return func() { walLimit = old }
}

// Migrations are the schema migrations, for tests that build an old
// database.
var Migrations = migrations
