package cp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/packet"
)

// TableFeed is the data plane of LBs in other processes (`nsc lb --cp`):
// it keeps what the CP writes for every instance and serves it on the
// CP's HTTP server as one table_add script (GET /tables), whose ETag is
// its SHA-256, so that the same tables have the same version across CP
// restarts. A client long-polls with If-None-Match and ?wait=D: the reply
// comes when the tables change, or as 304 Not Modified after D. Until the
// CP has programmed once after starting, the reply is 503, so that a
// restarted CP never hands out tables it has not rebuilt yet.
type TableFeed struct {
	Tables func(string) (*packet.TableSpec, bool) // the LB model's, to write the script

	mu      sync.Mutex
	state   map[int][]packet.TableEntry
	script  []byte
	etag    string
	ready   bool
	changed chan struct{} // closed when script changes
}

// MaxTablesWait bounds a /tables long poll.
const MaxTablesWait = time.Minute

// Apply implements DataPlane; the CP publishes at the end of its pass
// over the instances.
func (f *TableFeed) Apply(instance int, state []packet.TableEntry, _ calendar.Diff) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == nil {
		f.state = map[int][]packet.TableEntry{}
	}
	f.state[instance] = state
	return nil
}

// publish makes the instances' entries the script served.
func (f *TableFeed) publish() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b bytes.Buffer
	for _, i := range slices.Sorted(maps.Keys(f.state)) {
		if err := packet.FormatEntries(&b, f.state[i], f.Tables); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(b.Bytes())
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	f.ready = true
	if etag != f.etag {
		f.script, f.etag = b.Bytes(), etag
		close(f.changed)
		f.changed = make(chan struct{})
	}
	return nil
}

// current is the script served, its ETag, whether the CP has published
// and what closes at the next change.
func (f *TableFeed) current() ([]byte, string, bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.script, f.etag, f.ready, f.changed
}

// serveTables answers GET /tables for a bearer of READ_ONLY on ALL: a
// feed token (the tables show every LB's members and senders), or the
// admin token.
func (c *CP) serveTables(w http.ResponseWriter, r *http.Request) {
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	tok, known := c.store.Authenticate(strings.TrimSpace(secret))
	switch {
	case !ok || !known:
		http.Error(w, "want Authorization: Bearer <token holding READ_ONLY on ALL>", http.StatusUnauthorized)
		return
	case !c.holds(tok, Permission{Resource: pb.ResourceType_ALL, Level: pb.PermissionType_READ_ONLY}):
		http.Error(w, "the token does not hold READ_ONLY on ALL", http.StatusForbidden)
		return
	}
	var wait time.Duration
	if s := r.URL.Query().Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			http.Error(w, fmt.Sprintf("wait=%q: want a duration", s), http.StatusBadRequest)
			return
		}
		wait = min(d, MaxTablesWait)
	}
	f := c.cfg.Feed
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		script, etag, ready, changed := f.current()
		switch {
		case !ready:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "the control plane has not programmed its tables yet", http.StatusServiceUnavailable)
			return
		case etag != r.Header.Get("If-None-Match"):
			w.Header().Set("ETag", etag)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write(script)
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			w.Header().Set("ETag", etag)
			w.WriteHeader(http.StatusNotModified)
			return
		case <-r.Context().Done():
			return
		}
	}
}

// ModelTables is an LB model's tables, for Programming.Tables when the
// CP programs no data plane of its own but a Feed.
func ModelTables(model string) (func(string) (*packet.TableSpec, bool), error) {
	m, _, err := ejfat.LPG(model)
	if err != nil {
		return nil, err
	}
	return m.Schema.TableSpec, nil
}
