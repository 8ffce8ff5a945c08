package cp

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: nsc builds without cgo
)

// Errors the store returns; the server maps them to gRPC codes.
var (
	ErrNoInstance = errors.New("no LB instance is free")
	ErrNotFound   = errors.New("not found")
)

// migrations[i] takes the schema from version i to i+1. Append only.
var migrations = []string{`
CREATE TABLE reservations (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	instance INTEGER NOT NULL,
	name TEXT NOT NULL,
	strategy TEXT NOT NULL,
	ip_family INTEGER NOT NULL,
	created INTEGER NOT NULL,
	until INTEGER NOT NULL,
	freed INTEGER,
	token INTEGER -- the token Reserve made; revoked when freed
);
CREATE UNIQUE INDEX reservations_active ON reservations(instance) WHERE freed IS NULL;
CREATE TABLE senders (
	reservation INTEGER NOT NULL REFERENCES reservations(id) ON DELETE CASCADE,
	address TEXT NOT NULL,
	PRIMARY KEY (reservation, address)
);
CREATE TABLE sessions (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	reservation INTEGER NOT NULL REFERENCES reservations(id) ON DELETE CASCADE,
	name TEXT NOT NULL,
	weight REAL NOT NULL,
	ip TEXT NOT NULL,
	port INTEGER NOT NULL,
	port_range INTEGER NOT NULL,
	min_factor REAL NOT NULL,
	max_factor REAL NOT NULL,
	keep_lb_header INTEGER NOT NULL,
	demands TEXT NOT NULL,
	created INTEGER NOT NULL,
	token INTEGER -- the token Register made; revoked when deleted
);
CREATE TABLE session_states (
	session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	time INTEGER NOT NULL,
	fill REAL NOT NULL,
	control REAL NOT NULL,
	ready INTEGER NOT NULL,
	events_recv INTEGER NOT NULL,
	reassembled INTEGER NOT NULL,
	reassembly_err INTEGER NOT NULL,
	dequeued INTEGER NOT NULL,
	enqueue_err INTEGER NOT NULL,
	bytes INTEGER NOT NULL,
	packets INTEGER NOT NULL
);
CREATE INDEX session_states_by_session ON session_states(session, time);
CREATE TABLE epochs (
	reservation INTEGER NOT NULL REFERENCES reservations(id) ON DELETE CASCADE,
	number INTEGER NOT NULL,
	boundary INTEGER NOT NULL,
	created INTEGER NOT NULL,
	calendar BLOB NOT NULL,
	PRIMARY KEY (reservation, number)
);
CREATE TABLE sync_samples (
	reservation INTEGER NOT NULL REFERENCES reservations(id) ON DELETE CASCADE,
	time INTEGER NOT NULL,
	source INTEGER NOT NULL,
	event INTEGER NOT NULL,
	rate INTEGER NOT NULL,
	sender_time INTEGER NOT NULL
);
CREATE INDEX sync_samples_by_reservation ON sync_samples(reservation, time);
CREATE TABLE tokens (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	hash BLOB NOT NULL UNIQUE,
	name TEXT NOT NULL,
	parent INTEGER REFERENCES tokens(id) ON DELETE CASCADE,
	created INTEGER NOT NULL
);
CREATE TABLE token_permissions (
	token INTEGER NOT NULL REFERENCES tokens(id) ON DELETE CASCADE,
	resource_type INTEGER NOT NULL,
	resource_id TEXT NOT NULL,
	permission INTEGER NOT NULL
);
-- A token made for a reservation or session (and its children) grants
-- nothing once that is gone, so it goes too.
CREATE TRIGGER session_token AFTER DELETE ON sessions BEGIN
	DELETE FROM tokens WHERE id = OLD.token;
END;
CREATE TRIGGER reservation_token AFTER UPDATE OF freed ON reservations WHEN NEW.freed IS NOT NULL BEGIN
	DELETE FROM tokens WHERE id = NEW.token;
END;
`, `
-- Deleting a token looks up its children and permissions (the cascades),
-- deleting a reservation its sessions: without these, each a table scan.
CREATE INDEX tokens_by_parent ON tokens(parent);
CREATE INDEX token_permissions_by_token ON token_permissions(token);
CREATE INDEX sessions_by_reservation ON sessions(reservation);
-- A revoked token (with its descendants) grants nothing; its rows go
-- later, a few at a time: deleting a large subtree at once holds the
-- database for long.
ALTER TABLE tokens ADD COLUMN revoked INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER session_token;
CREATE TRIGGER session_token AFTER DELETE ON sessions BEGIN
	UPDATE tokens SET revoked = 1 WHERE id = OLD.token;
END;
DROP TRIGGER reservation_token;
CREATE TRIGGER reservation_token AFTER UPDATE OF freed ON reservations WHEN NEW.freed IS NOT NULL BEGIN
	UPDATE tokens SET revoked = 1 WHERE id = NEW.token;
END;
`, `
-- The receiver's own SendState timestamp (Unix ms; 0: none).
ALTER TABLE session_states ADD COLUMN reported INTEGER NOT NULL DEFAULT 0;
-- LOAD_BALANCER now names an LB instance, as in udplbd2; every one stored
-- so far named a reservation.
UPDATE token_permissions SET resource_type = 2 WHERE resource_type = 1;
-- Reservations registered as receivers upstream (ChainLoadBalancer).
CREATE TABLE upstream_chains (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	reservation INTEGER NOT NULL REFERENCES reservations(id) ON DELETE CASCADE,
	upstream TEXT NOT NULL, -- host:port
	tls INTEGER NOT NULL,
	upstream_lb TEXT NOT NULL,
	upstream_token TEXT NOT NULL,
	session_token TEXT NOT NULL,
	session_id TEXT NOT NULL,
	data4 TEXT NOT NULL,
	data6 TEXT NOT NULL,
	created INTEGER NOT NULL
);
`}

// liveEpochs is how many epochs a reservation keeps: the data plane holds
// up to 4 live ones.
const liveEpochs = 4

// syncWindow is how many recent sync samples per reservation the store
// keeps in memory for boundary prediction.
const syncWindow = 10

// Store keeps the CP's state in SQLite and a copy in memory. Every change
// commits to the database before memory changes, so a CP killed at any
// moment restarts (Open) with the state of its last committed change.
// Callers get copies; nothing they hold changes under them.
type Store struct {
	db       *sql.DB
	ckpt     *sql.DB // the checkpointer's connection
	states   chan stateWrite
	done     chan struct{} // closed when the state writer has stopped
	stop     chan struct{} // closed to stop the checkpointer (housekeep)
	ckptDone chan struct{}
	lock     *os.File // the flock on the database (dblock.go)

	mu       sync.RWMutex
	res      map[int64]*Reservation // the active (not freed) ones
	sessions map[int64]*Session
	epochs   map[int64][]Epoch // per reservation, oldest first
	sync     map[int64][]SyncSample
	tokens   map[int64]*Token
	byHash   map[[32]byte]int64
	tokenTree
	walGuard
}

// Open opens (creating or migrating) the database at path and loads it.
func Open(path string) (*Store, error) {
	dsn := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) +
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)"
	lock, err := lockDB(path)
	if err != nil {
		return nil, err
	}
	// Commits do not checkpoint (the checkpoint's fsyncs would stall the
	// calls waiting on them); checkpoint() does, on its own connection.
	db, err := sql.Open("sqlite", dsn+"&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		lock.Close()
		return nil, err
	}
	// One connection: SQLite has one writer anyway, and this way no call
	// ever sees SQLITE_BUSY.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, states: make(chan stateWrite, 1024), done: make(chan struct{}), stop: make(chan struct{}),
		ckptDone: make(chan struct{}), lock: lock, walGuard: walGuard{wal: path + "-wal", unflushed: map[int64]int{}}}
	if err := s.migrate(); err != nil {
		db.Close()
		lock.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.load(); err != nil {
		db.Close()
		lock.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.setLimits(Limits{})
	if s.ckpt, err = sql.Open("sqlite", dsn); err != nil {
		db.Close()
		lock.Close()
		return nil, err
	}
	s.ckpt.SetMaxOpenConns(1)
	go s.writeStates()
	go s.housekeep()
	return s, nil
}

// Close stops the state writer (after it wrote what it was given) and
// closes the database.
func (s *Store) Close() error {
	close(s.states)
	<-s.done
	close(s.stop)
	<-s.ckptDone
	return errors.Join(s.ckpt.Close(), s.db.Close(), s.lock.Close())
}

// SchemaVersion is the number of migrations applied.
func (s *Store) SchemaVersion() (int, error) {
	var v int
	err := s.db.QueryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v)
	return v, err
}

func (s *Store) migrate() error {
	if _, err := s.db.Exec(`CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	v, err := s.SchemaVersion()
	if err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this nsc (%d)", v, len(migrations))
	}
	for ; v < len(migrations); v++ {
		err := s.tx(func(tx *sql.Tx) error {
			if _, err := tx.Exec(migrations[v]); err != nil {
				return fmt.Errorf("migration %d: %w", v+1, err)
			}
			_, err := tx.Exec(`INSERT INTO schema_version VALUES (?)`, v+1)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// change commits write, then applies the change to memory under the
// lock. The lock is not held while writing, so calls go on meanwhile.
func (s *Store) change(write func(*sql.Tx) error, apply func() error) error {
	if err := s.tx(write); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return apply()
}

// execOne runs a statement that must change a row, else ErrNotFound.
func execOne(tx *sql.Tx, query string, args ...any) error {
	res, err := tx.Exec(query, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// tx runs f in a transaction, committing when it returns nil.
func (s *Store) tx(f func(*sql.Tx) error) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// newSecret returns a random token and its hash.
func newSecret() (string, [32]byte) {
	b := make([]byte, 32)
	rand.Read(b)
	secret := hex.EncodeToString(b)
	return secret, sha256.Sum256([]byte(secret))
}

// --- loading ---

func (s *Store) load() error {
	s.res = map[int64]*Reservation{}
	s.sessions = map[int64]*Session{}
	s.epochs = map[int64][]Epoch{}
	s.sync = map[int64][]SyncSample{}
	s.tokens = map[int64]*Token{}
	s.byHash = map[[32]byte]int64{}
	for _, f := range []func() error{s.loadReservations, s.loadSessions, s.loadEpochs, s.loadSync, s.loadTokens} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// each runs query and calls scan once per row.
func (s *Store) each(query string, scan func(*sql.Rows) error, args ...any) error {
	rows, err := s.db.Query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *Store) loadReservations() error {
	err := s.each(`SELECT id, instance, name, strategy, ip_family, created, until, COALESCE(token, 0) FROM reservations WHERE freed IS NULL`,
		func(rows *sql.Rows) error {
			var r Reservation
			var created, until int64
			if err := rows.Scan(&r.ID, &r.Instance, &r.Name, &r.Strategy, &r.IPFamily, &created, &until, &r.Token); err != nil {
				return err
			}
			r.Created, r.Until = fromMS(created), fromMS(until)
			s.res[r.ID] = &r
			return nil
		})
	if err != nil {
		return err
	}
	return s.each(`SELECT reservation, address FROM senders ORDER BY address`, func(rows *sql.Rows) error {
		var id int64
		var a string
		if err := rows.Scan(&id, &a); err != nil {
			return err
		}
		if r := s.res[id]; r != nil {
			r.Senders = append(r.Senders, a)
		}
		return nil
	})
}

const stateColumns = `time, fill, control, ready, events_recv, reassembled, reassembly_err, dequeued, enqueue_err, bytes, packets, reported`

func scanState(rows *sql.Rows, lead ...any) (State, error) {
	var st State
	var t, reported int64
	err := rows.Scan(append(lead, &t, &st.Fill, &st.Control, &st.Ready, &st.EventsRecv, &st.Reassembled,
		&st.ReassemblyErr, &st.Dequeued, &st.EnqueueErr, &st.Bytes, &st.Packets, &reported)...)
	st.Time, st.Reported = time.UnixMilli(t), fromMS(reported)
	return st, err
}

func (s *Store) loadSessions() error {
	err := s.each(`SELECT s.id, s.reservation, s.name, s.weight, s.ip, s.port, s.port_range, s.min_factor,
		s.max_factor, s.keep_lb_header, s.demands, s.created, COALESCE(s.token, 0)
		FROM sessions s JOIN reservations r ON r.id = s.reservation WHERE r.freed IS NULL`,
		func(rows *sql.Rows) error {
			var x Session
			var demands string
			var created int64
			if err := rows.Scan(&x.ID, &x.Reservation, &x.Name, &x.Weight, &x.IP, &x.Port, &x.PortRange,
				&x.MinFactor, &x.MaxFactor, &x.KeepLBHeader, &demands, &created, &x.Token); err != nil {
				return err
			}
			x.Created = fromMS(created)
			if err := json.Unmarshal([]byte(demands), &x.Demands); err != nil {
				return fmt.Errorf("session %d: slot demands: %w", x.ID, err)
			}
			s.sessions[x.ID] = &x
			return nil
		})
	if err != nil {
		return err
	}
	return s.each(`SELECT session, `+stateColumns+` FROM session_states
		WHERE rowid IN (SELECT MAX(rowid) FROM session_states GROUP BY session)`,
		func(rows *sql.Rows) error {
			var id int64
			st, err := scanState(rows, &id)
			if x := s.sessions[id]; x != nil {
				x.State = &st
			}
			return err
		})
}

func (s *Store) loadEpochs() error {
	return s.each(`SELECT reservation, number, boundary, created, calendar FROM epochs ORDER BY reservation, number`,
		func(rows *sql.Rows) error {
			var id, number, boundary, created int64
			var e Epoch
			var cal []byte
			if err := rows.Scan(&id, &number, &boundary, &created, &cal); err != nil {
				return err
			}
			// SQLite integers are signed: the uint64s are stored bit for bit.
			e.Number, e.Boundary, e.Created = uint64(number), uint64(boundary), fromMS(created)
			e.Calendar = decodeCalendar(cal)
			if s.res[id] == nil {
				return nil
			}
			if err := checkEpoch(id, s.epochs[id], e, len(cal)); err != nil {
				return err
			}
			s.epochs[id] = append(s.epochs[id], e)
			return nil
		})
}

func (s *Store) loadSync() error {
	return s.each(`SELECT reservation, time, source, event, rate, sender_time FROM sync_samples
		WHERE rowid IN (SELECT rowid FROM sync_samples x WHERE x.reservation = sync_samples.reservation
			ORDER BY rowid DESC LIMIT ?) ORDER BY rowid`,
		func(rows *sql.Rows) error {
			var id, t, event int64
			var x SyncSample
			if err := rows.Scan(&id, &t, &x.Source, &event, &x.Rate, &x.SenderTime); err != nil {
				return err
			}
			x.Time, x.Event = time.UnixMilli(t), uint64(event)
			if s.res[id] != nil {
				s.sync[id] = append(s.sync[id], x)
			}
			return nil
		}, syncWindow)
}

func (s *Store) loadTokens() error {
	hashes := map[int64][]byte{}
	var revoked []int64
	err := s.each(`SELECT id, hash, name, COALESCE(parent, 0), created, revoked FROM tokens`, func(rows *sql.Rows) error {
		var t Token
		var hash []byte
		var created int64
		var gone bool
		if err := rows.Scan(&t.ID, &hash, &t.Name, &t.Parent, &created, &gone); err != nil {
			return err
		}
		t.Created = fromMS(created)
		s.tokens[t.ID], hashes[t.ID] = &t, hash
		if gone {
			revoked = append(revoked, t.ID)
		}
		return nil
	})
	if err == nil {
		err = s.indexTokens(hashes, revoked)
	}
	if err != nil {
		return err
	}
	return s.each(`SELECT token, resource_type, resource_id, permission FROM token_permissions ORDER BY rowid`,
		func(rows *sql.Rows) error {
			var id int64
			var p Permission
			if err := rows.Scan(&id, &p.Resource, &p.ID, &p.Level); err != nil {
				return err
			}
			if t := s.tokens[id]; t != nil {
				t.Perms = append(t.Perms, p)
			}
			return nil
		})
}

func encodeCalendar(cal []int64) []byte {
	b := make([]byte, 0, 8*len(cal))
	for _, id := range cal {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return b
}

func decodeCalendar(b []byte) []int64 {
	cal := make([]int64, len(b)/8)
	for i := range cal {
		cal[i] = int64(binary.BigEndian.Uint64(b[8*i:]))
	}
	return cal
}

// --- tokens ---

// CreateToken stores a new token and returns it with its secret.
func (s *Store) CreateToken(name string, parent int64, perms []Permission, now time.Time) (Token, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.tokenRoom(parent); err != nil {
		return Token{}, "", err
	}
	var t Token
	var secret string
	err := s.tx(func(tx *sql.Tx) (err error) {
		t, secret, err = insertToken(tx, name, parent, perms, now)
		return err
	})
	if err != nil {
		return Token{}, "", err
	}
	s.addToken(t, secret)
	return t, secret, nil
}

func insertToken(tx *sql.Tx, name string, parent int64, perms []Permission, now time.Time) (Token, string, error) {
	secret, hash := newSecret()
	var p any
	if parent != 0 {
		p = parent
	}
	res, err := tx.Exec(`INSERT INTO tokens (hash, name, parent, created) VALUES (?, ?, ?, ?)`, hash[:], name, p, ms(now))
	if err != nil {
		return Token{}, "", err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Token{}, "", err
	}
	for _, x := range perms {
		if _, err := tx.Exec(`INSERT INTO token_permissions VALUES (?, ?, ?, ?)`, id, x.Resource, x.ID, x.Level); err != nil {
			return Token{}, "", err
		}
	}
	return Token{ID: id, Name: name, Parent: parent, Created: time.UnixMilli(ms(now)), Perms: slices.Clone(perms)}, secret, nil
}

// addToken records t in memory; s.mu is held.
func (s *Store) addToken(t Token, secret string) {
	s.tokens[t.ID] = &t
	s.linkToken(&t, sha256.Sum256([]byte(secret)))
}

// Authenticate returns the token whose secret this is.
func (s *Store) Authenticate(secret string) (Token, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.byHash[sha256.Sum256([]byte(secret))]
	if !ok {
		return Token{}, false
	}
	return s.tokens[id].copy(), true
}

func (t *Token) copy() Token {
	c := *t
	c.Perms = slices.Clone(t.Perms)
	return c
}

// get returns a copy of m[id], under the read lock.
func get[T any](s *Store, m map[int64]*T, id int64, copy func(*T) T) (T, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	x, ok := m[id]
	if !ok {
		var zero T
		return zero, false
	}
	return copy(x), true
}

// list returns copies of the values of m that keep selects, sorted by
// key, under the read lock.
func list[T any](s *Store, m map[int64]*T, keep func(*T) bool, copy func(*T) T) []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []T
	for _, id := range slices.Sorted(maps.Keys(m)) {
		if keep(m[id]) {
			out = append(out, copy(m[id]))
		}
	}
	return out
}

// Token returns the token with this ID.
func (s *Store) Token(id int64) (Token, bool) { return get(s, s.tokens, id, (*Token).copy) }

// Children returns the tokens whose parent is id, by ID.
func (s *Store) Children(id int64) []Token {
	return list(s, s.tokens, func(t *Token) bool { return t.Parent == id }, (*Token).copy)
}

// IsAncestorOrSelf says whether token a is b or one of b's ancestors.
func (s *Store) IsAncestorOrSelf(a, b int64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for id := b; id != 0; {
		if id == a {
			return true
		}
		t, ok := s.tokens[id]
		if !ok {
			return false
		}
		id = t.Parent
	}
	return false
}

// Revoke revokes token id and all its descendants in one transaction
// that marks it revoked: at once, whatever the subtree's size. Its rows
// are deleted later, a few at a time (collectRevoked), so as not to
// hold the database for long.
func (s *Store) Revoke(id int64) error {
	return s.change(func(tx *sql.Tx) error {
		return execOne(tx, `UPDATE tokens SET revoked = 1 WHERE id = ?`, id)
	}, func() error {
		s.dropToken(id)
		return nil
	})
}

// --- reservations ---

// Reserve stores r on the lowest free instance below instances, with a
// token holding perm on it (its ID filled in), child of parent.
func (s *Store) Reserve(r Reservation, instances int, parent int64, level Permission) (Reservation, string, error) {
	all := make([]int, instances)
	for i := range all {
		all[i] = i
	}
	return s.ReserveOn(r, all, parent, level)
}

// ReserveOn is Reserve on the first free one of instances.
func (s *Store) ReserveOn(r Reservation, instances []int, parent int64, level Permission) (Reservation, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	used := map[int]bool{}
	for _, x := range s.res {
		used[x.Instance] = true
	}
	r.Instance = -1
	for _, i := range instances {
		if !used[i] {
			r.Instance = i
			break
		}
	}
	if r.Instance < 0 {
		return Reservation{}, "", ErrNoInstance
	}
	if err := s.tokenRoom(parent); err != nil {
		return Reservation{}, "", err
	}
	var tok Token
	var secret string
	err := s.tx(func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT INTO reservations (instance, name, strategy, ip_family, created, until) VALUES (?, ?, ?, ?, ?, ?)`,
			r.Instance, r.Name, r.Strategy, r.IPFamily, ms(r.Created), ms(r.Until))
		if err != nil {
			return err
		}
		if r.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		if err := insertSenders(tx, r.ID, r.Senders); err != nil {
			return err
		}
		level.ID = fmt.Sprint(r.ID)
		if tok, secret, err = insertToken(tx, "reservation-"+level.ID, parent, []Permission{level}, r.Created); err != nil {
			return err
		}
		r.Token = tok.ID
		_, err = tx.Exec(`UPDATE reservations SET token = ? WHERE id = ?`, tok.ID, r.ID)
		return err
	})
	if err != nil {
		return Reservation{}, "", err
	}
	r.Senders = sortedUnique(r.Senders)
	s.res[r.ID] = &r
	s.addToken(tok, secret)
	return r.copy(), secret, nil
}

func insertSenders(tx *sql.Tx, id int64, addrs []string) error {
	for _, a := range addrs {
		if _, err := tx.Exec(`INSERT OR IGNORE INTO senders VALUES (?, ?)`, id, a); err != nil {
			return err
		}
	}
	return nil
}

func sortedUnique(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

func (r *Reservation) copy() Reservation {
	c := *r
	c.Senders = slices.Clone(r.Senders)
	return c
}

// Reservation returns the active reservation id.
func (s *Store) Reservation(id int64) (Reservation, bool) {
	return get(s, s.res, id, (*Reservation).copy)
}

// Reservations returns the active reservations by ID.
func (s *Store) Reservations() []Reservation {
	return list(s, s.res, func(*Reservation) bool { return true }, (*Reservation).copy)
}

// Free ends reservation id: its instance becomes free, and its sessions,
// senders, epochs, sync samples and the tokens made for it and its
// sessions (with their children) are deleted.
func (s *Store) Free(id int64, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.res[id] == nil {
		return ErrNotFound
	}
	err := s.tx(func(tx *sql.Tx) error {
		if _, err := tx.Exec(`UPDATE reservations SET freed = ? WHERE id = ?`, ms(now), id); err != nil {
			return err
		}
		for _, table := range []string{"sessions", "senders", "epochs", "sync_samples"} {
			if _, err := tx.Exec(`DELETE FROM `+table+` WHERE reservation = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.dropToken(s.res[id].Token)
	delete(s.res, id)
	s.resetMemory(id, true, true, true)
	return nil
}

// resetMemory forgets reservation id's sync samples, epochs and sessions as
// asked; s.mu is held.
func (s *Store) resetMemory(id int64, sync, epochs, sessions bool) {
	if sync {
		delete(s.sync, id)
		delete(s.unflushed, id)
	}
	if epochs {
		delete(s.epochs, id)
	}
	if sessions {
		for sid, x := range s.sessions {
			if x.Reservation == id {
				s.dropToken(x.Token)
				delete(s.sessions, sid)
			}
		}
	}
}

// SetUntil changes when reservation id expires.
func (s *Store) SetUntil(id int64, until time.Time) error {
	return s.updateReservation(id, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE reservations SET until = ? WHERE id = ?`, ms(until), id)
		return err
	}, func(r *Reservation) { r.Until = until })
}

// AddSenders adds sender addresses to reservation id.
func (s *Store) AddSenders(id int64, addrs []string) error {
	return s.updateReservation(id, func(tx *sql.Tx) error {
		if err := s.senderRoom(id, addrs); err != nil {
			return err
		}
		return insertSenders(tx, id, addrs)
	},
		func(r *Reservation) { r.Senders = sortedUnique(append(r.Senders, addrs...)) })
}

// RemoveSenders removes sender addresses from reservation id.
func (s *Store) RemoveSenders(id int64, addrs []string) error {
	return s.updateReservation(id, func(tx *sql.Tx) error {
		for _, a := range addrs {
			if _, err := tx.Exec(`DELETE FROM senders WHERE reservation = ? AND address = ?`, id, a); err != nil {
				return err
			}
		}
		return nil
	}, func(r *Reservation) {
		r.Senders = slices.DeleteFunc(r.Senders, func(a string) bool { return slices.Contains(addrs, a) })
	})
}

// Reset deletes what the flags select of reservation id's state.
func (s *Store) Reset(id int64, sync, epochs, senders, sessions bool) error {
	tables := map[string]bool{"sync_samples": sync, "epochs": epochs, "senders": senders, "sessions": sessions}
	return s.updateReservation(id, func(tx *sql.Tx) error {
		for table, on := range tables {
			if !on {
				continue
			}
			if _, err := tx.Exec(`DELETE FROM `+table+` WHERE reservation = ?`, id); err != nil {
				return err
			}
		}
		return nil
	}, func(r *Reservation) {
		if senders {
			r.Senders = nil
		}
		s.resetMemory(id, sync, epochs, sessions)
	})
}

// updateReservation runs write in a transaction, then apply to the
// in-memory reservation; s.mu is held throughout.
func (s *Store) updateReservation(id int64, write func(*sql.Tx) error, apply func(*Reservation)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res[id]
	if r == nil {
		return ErrNotFound
	}
	if err := s.tx(write); err != nil {
		return err
	}
	apply(r)
	return nil
}

// --- sessions ---

// Register stores x (its ID filled in) with a token holding level on it,
// child of parent.
func (s *Store) Register(x Session, parent int64, level Permission) (Session, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.res[x.Reservation] == nil {
		return Session{}, "", ErrNotFound
	}
	if err := s.sessionRoom(x.Reservation, parent); err != nil {
		return Session{}, "", err
	}
	demands, err := json.Marshal(x.Demands)
	if err != nil {
		return Session{}, "", err
	}
	var tok Token
	var secret string
	err = s.tx(func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT INTO sessions (reservation, name, weight, ip, port, port_range, min_factor, max_factor,
			keep_lb_header, demands, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			x.Reservation, x.Name, x.Weight, x.IP, x.Port, x.PortRange, x.MinFactor, x.MaxFactor, x.KeepLBHeader,
			string(demands), ms(x.Created))
		if err != nil {
			return err
		}
		if x.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		level.ID = fmt.Sprint(x.ID)
		if tok, secret, err = insertToken(tx, "session-"+level.ID, parent, []Permission{level}, x.Created); err != nil {
			return err
		}
		x.Token = tok.ID
		_, err = tx.Exec(`UPDATE sessions SET token = ? WHERE id = ?`, tok.ID, x.ID)
		return err
	})
	if err != nil {
		return Session{}, "", err
	}
	s.sessions[x.ID] = &x
	s.addToken(tok, secret)
	return x.copy(), secret, nil
}

func (x *Session) copy() Session {
	c := *x
	c.Demands = slices.Clone(x.Demands)
	if x.State != nil {
		st := *x.State
		c.State = &st
	}
	return c
}

// Session returns session id.
func (s *Store) Session(id int64) (Session, bool) { return get(s, s.sessions, id, (*Session).copy) }

// Sessions returns reservation id's sessions by ID.
func (s *Store) Sessions(id int64) []Session {
	return list(s, s.sessions, func(x *Session) bool { return x.Reservation == id }, (*Session).copy)
}

// Deregister deletes session id, its states and its token.
func (s *Store) Deregister(id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[id] == nil {
		return ErrNotFound
	}
	if _, err := s.db.Exec(`DELETE FROM sessions WHERE id = ?`, id); err != nil {
		return err
	}
	s.dropToken(s.sessions[id].Token)
	delete(s.sessions, id)
	return nil
}

// SetDemands replaces the slot demands of the sessions given.
func (s *Store) SetDemands(demands map[int64][]SlotRange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.tx(func(tx *sql.Tx) error {
		for id, d := range demands {
			b, err := json.Marshal(d)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(`UPDATE sessions SET demands = ? WHERE id = ?`, string(b), id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for id, d := range demands {
		if x := s.sessions[id]; x != nil {
			x.Demands = slices.Clone(d)
		}
	}
	return nil
}

// stateWrite is one state waiting for the writer.
type stateWrite struct {
	session int64
	state   State
	done    chan error
}

// AddState stores st as session id's latest state. Concurrent calls are
// committed together (group commit): each returns once its state is
// durable, so SendState costs one transaction per batch, not per call.
func (s *Store) AddState(id int64, st State) error {
	w := stateWrite{id, st, make(chan error, 1)}
	s.states <- w
	return <-w.done
}

// writeStates commits batches of states until s.states is closed.
func (s *Store) writeStates() {
	defer close(s.done)
	for w := range s.states {
		batch := []stateWrite{w}
	drain:
		for len(batch) < cap(s.states) {
			select {
			case w, ok := <-s.states:
				if !ok {
					break drain
				}
				batch = append(batch, w)
			default:
				break drain
			}
		}
		err := s.commitStates(batch)
		for _, w := range batch {
			w.done <- err
		}
	}
}

// commitStates writes a batch without holding s.mu, so calls are
// authenticated while it commits; a session deleted meanwhile gets no row
// (WHERE EXISTS) and no memory update.
func (s *Store) commitStates(batch []stateWrite) error {
	return s.change(func(tx *sql.Tx) error {
		stmt, err := tx.Prepare(`INSERT INTO session_states (session, ` + stateColumns + `)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, w := range batch {
			st := w.state
			if _, err := stmt.Exec(w.session, ms(st.Time), st.Fill, st.Control, st.Ready, st.EventsRecv, st.Reassembled,
				st.ReassemblyErr, st.Dequeued, st.EnqueueErr, st.Bytes, st.Packets, ms(st.Reported), w.session); err != nil {
				return err
			}
		}
		return nil
	}, func() error {
		for _, w := range batch {
			if x := s.sessions[w.session]; x != nil {
				st := w.state
				x.State = &st
			}
		}
		return nil
	})
}

// States returns session id's states after since, oldest first, at most
// limit of them.
func (s *Store) States(id int64, since time.Time, limit int) ([]State, error) {
	var out []State
	err := s.each(`SELECT `+stateColumns+` FROM session_states WHERE session = ? AND time > ? ORDER BY time LIMIT ?`,
		func(rows *sql.Rows) error {
			st, err := scanState(rows)
			out = append(out, st)
			return err
		}, id, ms(since), limit)
	return out, err
}

// --- epochs and sync ---

// AddEpoch stores e as reservation id's newest epoch, keeping the last
// liveEpochs.
func (s *Store) AddEpoch(id int64, e Epoch) error { return s.addEpoch(id, e, false) }

// RebaseEpoch stores e as reservation id's newest epoch after the
// current newest, which now begins at event 0; the older ones retire.
// (Their ranges are out of the senders' reach: the CP's nextEpoch.)
func (s *Store) RebaseEpoch(id int64, e Epoch) error { return s.addEpoch(id, e, true) }

func (s *Store) addEpoch(id int64, e Epoch, rebase bool) error {
	return s.change(func(tx *sql.Tx) error {
		if err := insertForActive(tx, `INSERT INTO epochs SELECT ?, ?, ?, ?, ?`, id, int64(e.Number), int64(e.Boundary),
			ms(e.Created), encodeCalendar(e.Calendar)); err != nil {
			return err
		}
		older := int64(e.Number) - liveEpochs
		if rebase {
			older = int64(e.Number) - 2
			if _, err := tx.Exec(`UPDATE epochs SET boundary = 0 WHERE reservation = ? AND number = ?`, id, older+1); err != nil {
				return err
			}
		}
		_, err := tx.Exec(`DELETE FROM epochs WHERE reservation = ? AND number <= ?`, id, older)
		return err
	}, func() error {
		if s.res[id] == nil {
			return ErrNotFound
		}
		e.Calendar = slices.Clone(e.Calendar)
		es := append(s.epochs[id], e)
		keep := liveEpochs
		if rebase && len(es) > 1 {
			keep = 2
			es[len(es)-2].Boundary = 0
		}
		s.epochs[id] = es[max(0, len(es)-keep):]
		return nil
	})
}

// insertForActive runs insert (an INSERT … SELECT of the values, the
// first the reservation id) only while reservation id is active, else
// ErrNotFound. The store lock is not held: calls go on while it writes.
func insertForActive(tx *sql.Tx, insert string, values ...any) error {
	return execOne(tx, insert+` WHERE EXISTS (SELECT 1 FROM reservations WHERE id = ? AND freed IS NULL)`,
		append(values, values[0])...)
}

// Epochs returns reservation id's live epochs, oldest first.
func (s *Store) Epochs(id int64) []Epoch {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := slices.Clone(s.epochs[id])
	for i := range out {
		out[i].Calendar = slices.Clone(out[i].Calendar)
	}
	return out
}

// AddSync records a sync sample for reservation id: in memory at once,
// for the boundaries, and in the database at the next flush (walguard.go).
func (s *Store) AddSync(id int64, x SyncSample) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.res[id] == nil {
		return ErrNotFound
	}
	xs := append(s.sync[id], x)
	s.sync[id] = xs[max(0, len(xs)-syncWindow):]
	s.unflushed[id] = min(s.unflushed[id]+1, syncWindow)
	return nil
}

// Sync returns reservation id's last sync samples, oldest first.
func (s *Store) Sync(id int64) []SyncSample {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.sync[id])
}

// Prune deletes states and sync samples older than before, so the
// database stays bounded. It deletes per session and per reservation, so
// the deletes use the (session, time) and (reservation, time) indexes
// rather than scanning the tables.
func (s *Store) Prune(before time.Time) error {
	s.mu.RLock()
	sessions := slices.Collect(maps.Keys(s.sessions))
	res := slices.Collect(maps.Keys(s.res))
	s.mu.RUnlock()
	return s.tx(func(tx *sql.Tx) error {
		for _, id := range sessions {
			if _, err := tx.Exec(`DELETE FROM session_states WHERE session = ? AND time < ?`, id, ms(before)); err != nil {
				return err
			}
		}
		for _, id := range res {
			if _, err := tx.Exec(`DELETE FROM sync_samples WHERE reservation = ? AND time < ?`, id, ms(before)); err != nil {
				return err
			}
		}
		return nil
	})
}
