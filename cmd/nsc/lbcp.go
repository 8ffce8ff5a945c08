package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// cpPoll is how long one long poll of an nsc cp's /tables waits.
const cpPoll = 30 * time.Second

// cpRetry is how soon a poll follows a failed one.
const cpRetry = 250 * time.Millisecond

// cpTables follows the tables an nsc cp serves (GET /tables, --lb-feed)
// for nsc lb --cp: it long-polls with the version it holds and, at each
// new version, has the LB load its --tables and the CP's entries anew;
// while the CP cannot be reached the LB keeps the tables it has.
type cpTables struct {
	addr, token, ca string
	url             string       // of the tables: https:// with a CA
	client          *http.Client // trusting the CA

	mu     sync.Mutex
	script []byte
	etag   string
}

// dial readies the client: HTTPS trusting only the CA in file c.ca when
// one is given, else HTTP.
func (c *cpTables) dial() error {
	c.url, c.client = "http://"+c.addr+"/tables", http.DefaultClient
	if c.ca == "" {
		return nil
	}
	pem, err := os.ReadFile(c.ca)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return fmt.Errorf("--tls-ca %s: no PEM certificate", c.ca)
	}
	c.url = "https://" + c.addr + "/tables"
	c.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	return nil
}

// entries are the CP's entries held.
func (c *cpTables) entries() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.script
}

// poll asks for the tables once, waiting up to wait for a version other
// than the one held; changed reports a new script.
func (c *cpTables) poll(ctx context.Context, wait time.Duration) (script []byte, etag string, changed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", c.url+"?wait="+wait.String(), nil)
	if err != nil {
		return nil, "", false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	c.mu.Lock()
	if c.etag != "" {
		req.Header.Set("If-None-Match", c.etag)
	}
	c.mu.Unlock()
	res, err := c.client.Do(req)
	if err != nil {
		return nil, "", false, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	switch {
	case err != nil:
		return nil, "", false, err
	case res.StatusCode == http.StatusNotModified:
		return nil, res.Header.Get("ETag"), false, nil
	case res.StatusCode != http.StatusOK:
		return nil, "", false, fmt.Errorf("%s: %.200s", res.Status, body)
	}
	return body, res.Header.Get("ETag"), true, nil
}

// take holds a new version and has reload load it; if that fails the
// entries held stay, but the version is taken, so as not to fetch it again.
func (c *cpTables) take(e *env, script []byte, etag string, reload func() error) {
	c.mu.Lock()
	old := c.script
	c.script, c.etag = script, etag
	c.mu.Unlock()
	if err := reload(); err != nil {
		c.mu.Lock()
		c.script = old
		c.mu.Unlock()
		fmt.Fprintf(e.stderr, "nsc lb: the tables of nsc cp at %s, version %s: %v; keeping the old ones\n", c.addr, etag, err)
		return
	}
	fmt.Fprintf(e.stdout, "tables from nsc cp at %s: version %s\n", c.addr, etag)
}

// follow polls until ctx ends.
func (c *cpTables) follow(ctx context.Context, e *env, reload func() error) {
	down := false
	for ctx.Err() == nil {
		wait := cpPoll
		if down { // say at once whether it is back
			wait = 0
		}
		script, etag, changed, err := c.poll(ctx, wait)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !down {
				fmt.Fprintf(e.stderr, "nsc lb: nsc cp at %s: %v; forwarding with the tables held\n", c.addr, err)
				down = true
			}
			time.Sleep(cpRetry)
			continue
		case down:
			fmt.Fprintf(e.stdout, "nsc cp at %s is back: version %s\n", c.addr, etag)
			down = false
		}
		if changed {
			c.take(e, script, etag, reload)
		}
	}
}
