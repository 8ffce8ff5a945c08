package cp

import (
	"database/sql"
	"log"
	"os"
	"time"
)

// walGuard keeps the database's write-ahead log bounded whatever clients
// send: sync samples are written in batches, at most syncWindow per
// reservation and flush, and the log is truncated when it outgrows
// walLimit. Its fields are guarded by the Store's mu.
type walGuard struct {
	wal       string        // the WAL file's path
	unflushed map[int64]int // per reservation, how many of its newest samples are not written yet
}

// How often sync samples are written and the WAL checkpointed, and the
// WAL size past which a checkpoint truncates it.
const (
	syncFlushEvery  = 100 * time.Millisecond
	checkpointEvery = time.Second
)

var walLimit int64 = 64 << 20 // a variable, for tests

// housekeep flushes sync samples and deletes a chunk of revoked tokens
// every syncFlushEvery and checkpoints the WAL every checkpointEvery
// until Close, then flushes once more.
func (s *Store) housekeep() {
	flush := time.NewTicker(syncFlushEvery)
	defer flush.Stop()
	ckpt := time.NewTicker(checkpointEvery)
	defer ckpt.Stop()
	for {
		select {
		case <-s.stop:
			s.logErr("write sync samples", s.flushSync())
			s.ckptDone <- struct{}{}
			return
		case <-flush.C:
			s.logErr("write sync samples", s.flushSync())
			s.logErr("delete revoked tokens", s.collectRevoked())
		case <-ckpt.C:
			s.logErr("checkpoint", s.checkpoint())
		}
	}
}

func (s *Store) logErr(what string, err error) {
	if err != nil {
		log.Printf("nsc cp: %s: %v", what, err)
	}
}

// flushSync writes the sync samples not written yet in one transaction.
// It holds the lock so that a Reset or Free cannot come between taking
// the samples and writing them; the transaction is a few rows.
func (s *Store) flushSync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unflushed) == 0 {
		return nil
	}
	err := s.tx(func(tx *sql.Tx) error {
		stmt, err := tx.Prepare(`INSERT INTO sync_samples VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for id, n := range s.unflushed {
			xs := s.sync[id]
			for _, x := range xs[len(xs)-n:] {
				if _, err := stmt.Exec(id, ms(x.Time), x.Source, int64(x.Event), x.Rate, x.SenderTime); err != nil {
					return err
				}
			}
		}
		return nil
	})
	clear(s.unflushed)
	return err
}

// checkpoint copies the WAL into the database without blocking writers
// (PASSIVE); a WAL grown past walLimit (writes never paused long enough
// for a passive checkpoint to finish) is checkpointed in full and
// truncated (TRUNCATE), which holds writers off for that while.
func (s *Store) checkpoint() error {
	if _, err := s.ckpt.Exec(`PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		return err
	}
	fi, err := os.Stat(s.wal)
	if err != nil {
		return nil // no WAL yet
	}
	if fi.Size() <= walLimit {
		return nil
	}
	_, err = s.ckpt.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}
