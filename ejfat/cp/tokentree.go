package cp

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"maps"
	"slices"
)

// tokenTree indexes the tokens by parent, with each token's number of
// descendants and its hash, so that revoking a subtree costs the
// subtree's size and checking the limits the token's depth, never the
// number of tokens. Guarded by the Store's mu.
type tokenTree struct {
	kids   map[int64]map[int64]bool // children by parent (0: the roots)
	desc   map[int64]int            // descendants by token; absent: none
	hashes map[int64][32]byte
	limits Limits
	// Tokens revoked (gone from memory) whose subtrees are still in the
	// database, for collectRevoked, and the first one's tokens not yet
	// deleted, deepest first (collectRevoked's own).
	revoking []int64
	doomed   []int64
}

// setLimits sets the limits (zero fields: the defaults).
func (s *Store) setLimits(l Limits) {
	l.defaults()
	s.mu.Lock()
	s.limits = l
	s.mu.Unlock()
}

// linkToken indexes token t, already in s.tokens, whose hash is hash;
// s.mu is held.
func (s *Store) linkToken(t *Token, hash [32]byte) {
	s.byHash[hash], s.hashes[t.ID] = t.ID, hash
	if s.kids[t.Parent] == nil {
		s.kids[t.Parent] = map[int64]bool{}
	}
	s.kids[t.Parent][t.ID] = true
	for a := t.Parent; a != 0; a = s.tokens[a].Parent {
		s.desc[a]++
	}
}

// tokenRoom says whether parent may have one more child: it has fewer
// than TokenChildren, it and each of its ancestors but a root fewer than
// TokenDescendants descendants, and the child would be at most
// TokenDepth below its root. s.mu is held.
func (s *Store) tokenRoom(parent int64) error {
	if parent == 0 {
		return nil
	}
	if n := len(s.kids[parent]); n >= s.limits.TokenChildren {
		return limitf("token %d has %d children, the most a token may have", parent, n)
	}
	depth := 0
	for a := parent; a != 0; a = s.tokens[a].Parent {
		t, ok := s.tokens[a]
		if !ok {
			return ErrNotFound // revoked meanwhile
		}
		if depth++; depth > s.limits.TokenDepth {
			return limitf("token %d is %d below its root, the deepest a token may be", parent, depth)
		}
		if n := s.desc[a]; t.Parent != 0 && n >= s.limits.TokenDescendants {
			return limitf("token %d has %d descendants, the most a token may have", a, n)
		}
	}
	return nil
}

// dropToken forgets token id and its descendants, revoked in the
// database, and leaves their rows to collectRevoked; s.mu is held.
func (s *Store) dropToken(id int64) {
	if _, ok := s.tokens[id]; ok {
		s.forget(id)
		s.revoking = append(s.revoking, id)
	}
}

// subtree is token id and its descendants, each after its parent (id 0:
// the roots and theirs, after 0); s.mu is held (read).
func (s *Store) subtree(id int64) []int64 {
	if _, ok := s.tokens[id]; !ok && id != 0 {
		return nil
	}
	out := []int64{id}
	for i := 0; i < len(out); i++ {
		out = append(out, slices.Sorted(maps.Keys(s.kids[out[i]]))...)
	}
	return out
}

// forget drops token id and its descendants from memory; s.mu is held.
// Token 0 (none) has no descendants: parentless tokens are roots.
func (s *Store) forget(id int64) {
	if id == 0 {
		return
	}
	gone := s.subtree(id)
	if len(gone) == 0 {
		return
	}
	parent := s.tokens[id].Parent
	for a := parent; a != 0; a = s.tokens[a].Parent {
		s.desc[a] -= len(gone)
	}
	delete(s.kids[parent], id)
	for _, t := range gone {
		delete(s.byHash, s.hashes[t])
		delete(s.hashes, t)
		delete(s.kids, t)
		delete(s.desc, t)
		delete(s.tokens, t)
	}
}

// revokeChunk is how many tokens collectRevoked deletes per transaction:
// about 10 ms of the database's time here.
const revokeChunk = 250

// collectRevoked deletes up to revokeChunk tokens of the first revoked
// subtree still in the database, deepest first — so that no delete
// cascades, and a crash leaves no token whose parent is gone. Only
// housekeep calls it; it holds the lock only to read and update
// revoking, so calls go on while it deletes.
func (s *Store) collectRevoked() error {
	s.mu.Lock()
	if len(s.revoking) == 0 {
		s.mu.Unlock()
		return nil
	}
	root := s.revoking[0]
	s.mu.Unlock()
	if s.doomed == nil {
		// A revoked subtree does not grow: its tokens no longer
		// authenticate, so none makes a child.
		err := s.each(`WITH RECURSIVE sub(id, depth) AS (SELECT ?, 0
			UNION ALL SELECT t.id, sub.depth + 1 FROM tokens t JOIN sub ON t.parent = sub.id)
			SELECT id FROM sub ORDER BY depth DESC`, func(rows *sql.Rows) error {
			var id int64
			err := rows.Scan(&id)
			s.doomed = append(s.doomed, id)
			return err
		}, root)
		if err != nil {
			s.doomed = nil
			return err
		}
	}
	chunk := s.doomed[:min(revokeChunk, len(s.doomed))]
	err := s.tx(func(tx *sql.Tx) error {
		stmt, err := tx.Prepare(`DELETE FROM tokens WHERE id = ?`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, id := range chunk {
			if _, err := stmt.Exec(id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.doomed = s.doomed[len(chunk):]; len(s.doomed) == 0 {
		s.doomed = nil
		s.mu.Lock()
		s.revoking = s.revoking[1:]
		s.mu.Unlock()
	}
	return nil
}

// indexTokens checks the loaded tokens — a 32-byte hash each, parents
// that exist, no cycles — and indexes them, in time linear in their
// number, but for the revoked ones and their descendants, which it
// leaves to collectRevoked; s.mu need not be held (Open).
func (s *Store) indexTokens(hashes map[int64][]byte, revoked []int64) error {
	s.kids, s.desc, s.hashes = map[int64]map[int64]bool{}, map[int64]int{}, map[int64][32]byte{}
	for _, id := range slices.Sorted(maps.Keys(s.tokens)) {
		t := s.tokens[id]
		if len(hashes[id]) != sha256.Size {
			return fmt.Errorf("token %d: a hash of %d bytes, not %d", id, len(hashes[id]), sha256.Size)
		}
		if _, ok := s.tokens[t.Parent]; !ok && t.Parent != 0 {
			return fmt.Errorf("token %d: parent %d does not exist", id, t.Parent)
		}
		if s.kids[t.Parent] == nil {
			s.kids[t.Parent] = map[int64]bool{}
		}
		s.kids[t.Parent][id] = true
		s.byHash[[32]byte(hashes[id])], s.hashes[id] = id, [32]byte(hashes[id])
	}
	// Every parent exists: the tokens not reached from the roots are on
	// or below a cycle.
	order := s.subtree(0)[1:]
	if len(order) != len(s.tokens) {
		for _, id := range slices.Sorted(maps.Keys(s.tokens)) {
			if !slices.Contains(order, id) {
				return fmt.Errorf("token %d: its ancestors make a cycle", id)
			}
		}
	}
	for _, id := range slices.Backward(order) {
		if p := s.tokens[id].Parent; p != 0 {
			s.desc[p] += s.desc[id] + 1
		}
	}
	for _, id := range revoked {
		s.dropToken(id) // nothing if under a token dropped before
	}
	return nil
}

// sessionRoom says whether LB id may have one more session, made by a
// child of parent; s.mu is held.
func (s *Store) sessionRoom(id, parent int64) error {
	n := 0
	for _, x := range s.sessions {
		if x.Reservation == id {
			n++
		}
	}
	if n >= s.limits.Sessions {
		return limitf("LB %d has %d sessions, the most an LB may have", id, n)
	}
	return s.tokenRoom(parent)
}
