package cp

import (
	"database/sql"
	"time"
)

// Chain is a reservation registered as a receiver of an LB on an
// upstream control plane (ChainLoadBalancer): the upstream session it
// holds and how to reach it.
type Chain struct {
	ID           int64
	Reservation  int64
	Upstream     string // the upstream CP's gRPC host:port
	TLS          bool
	UpstreamLB   string // the upstream lbId
	UpstreamTok  string // the token of the ejfatUri (reads the upstream's chain graph)
	SessionTok   string // the upstream session's token (SendState, Deregister)
	SessionID    string
	Data4, Data6 string // the upstream LB's data addresses
	Created      time.Time
}

const chainColumns = `id, reservation, upstream, tls, upstream_lb, upstream_token, session_token, session_id, data4, data6, created`

// AddChain stores c (its ID filled in) for an active reservation.
func (s *Store) AddChain(c Chain) (Chain, error) {
	err := s.tx(func(tx *sql.Tx) error {
		if err := insertForActive(tx, `INSERT INTO upstream_chains (reservation, upstream, tls, upstream_lb, upstream_token,
			session_token, session_id, data4, data6, created) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?`,
			c.Reservation, c.Upstream, c.TLS, c.UpstreamLB, c.UpstreamTok, c.SessionTok, c.SessionID, c.Data4, c.Data6,
			ms(c.Created)); err != nil {
			return err
		}
		return tx.QueryRow(`SELECT last_insert_rowid()`).Scan(&c.ID)
	})
	return c, err
}

// Chains returns the chains of reservation id (0: of every reservation),
// by ID.
func (s *Store) Chains(id int64) ([]Chain, error) {
	return s.chains(`? IN (0, reservation)`, id)
}

// Chain returns chain id, or ErrNotFound.
func (s *Store) Chain(id int64) (Chain, error) {
	cs, err := s.chains(`id = ?`, id)
	if err == nil && len(cs) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Chain{}, err
	}
	return cs[0], nil
}

func (s *Store) chains(where string, arg int64) ([]Chain, error) {
	var out []Chain
	err := s.each(`SELECT `+chainColumns+` FROM upstream_chains WHERE `+where+` ORDER BY id`,
		func(rows *sql.Rows) error {
			var c Chain
			var created int64
			err := rows.Scan(&c.ID, &c.Reservation, &c.Upstream, &c.TLS, &c.UpstreamLB, &c.UpstreamTok, &c.SessionTok,
				&c.SessionID, &c.Data4, &c.Data6, &created)
			c.Created = fromMS(created)
			out = append(out, c)
			return err
		}, arg)
	return out, err
}

// DeleteChain forgets chain id.
func (s *Store) DeleteChain(id int64) error {
	return s.tx(func(tx *sql.Tx) error { return execOne(tx, `DELETE FROM upstream_chains WHERE id = ?`, id) })
}
