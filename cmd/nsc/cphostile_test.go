package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// TestLBFromCPOverTLSWithFeedToken: `nsc cp --tls-cert --lb-feed` serves
// its HTTP (and so GET /tables) over TLS too; a feed token (READ_ONLY on
// ALL, made with CreateToken) fetches the tables, over HTTPS only, and
// `nsc lb --cp --token FEED --tls-ca CERT` follows them.
func TestLBFromCPOverTLSWithFeedToken(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, cert, string(certPEM))
	writeFile(t, key, string(keyPEM))
	grpcAddr, httpAddr := freeTCP(t), freeTCP(t)
	p := startNSC(t, "cp", "--grpc", grpcAddr, "--http", httpAddr, "--db", filepath.Join(dir, "cp.db"),
		"--admin-token-file", filepath.Join(dir, "admin"), "--instances", "1", "--epoch-interval", "100ms",
		"--lb-feed", "--tls-cert", cert, "--tls-key", key)
	p.expect(t, p.stdout, "nsc cp: gRPC on ")
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(roots, "127.0.0.1")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lc := pb.NewLoadBalancerClient(conn)
	tok, err := lc.CreateToken(bearer(adminToken(t, dir)), &pb.CreateTokenRequest{Name: "feed",
		Permissions: []*pb.TokenPermission{{ResourceType: pb.ResourceType_ALL, Permission: pb.PermissionType_READ_ONLY}}})
	if err != nil {
		t.Fatal(err)
	}
	feed := tok.Token
	if _, err := lc.ReserveLoadBalancer(bearer(adminToken(t, dir)), &pb.ReserveLoadBalancerRequest{Name: "tls", SenderAddresses: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	get := func(c *http.Client, url, token string) (int, string, error) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body), nil
	}
	var code int
	var script string
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, script, err = get(https, "https://"+httpAddr+"/tables", feed); code == http.StatusOK && strings.Contains(script, "src_filter") {
			break
		}
	}
	if code != http.StatusOK || !strings.Contains(script, "ipv4_src_filter_table") {
		t.Fatalf("GET /tables over HTTPS with the feed token: %d, %v, %q", code, err, script)
	}
	if code, _, err := get(http.DefaultClient, "http://"+httpAddr+"/tables", feed); err == nil && code == http.StatusOK {
		t.Error("GET /tables over plain HTTP answered 200")
	}
	lbAddr := lbtest.Addr(t)
	ip := binary.BigEndian.Uint32(lbAddr.IP.To4())
	base := filepath.Join(dir, "base.tables")
	writeFile(t, base, fmt.Sprintf("table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0\n", ip, ip))
	lb := startNSC(t, "lb", "--tables", base, "--listen", lbAddr.String(), "--workers", "1", "--mac", "00:aa:bb:cc:dd:ee",
		"--cp", httpAddr, "--token", feed, "--tls-ca", cert)
	lb.expect(t, lb.stdout, "tables from nsc cp at "+httpAddr+": version ")
}

// TestCPSecondOnSameDBRefused: a second `nsc cp` on the database another
// one serves exits 1, naming the first: its pid, host and addresses.
func TestCPSecondOnSameDBRefused(t *testing.T) {
	dir := t.TempDir()
	first := startNSC(t, "cp", "--grpc", "127.0.0.1:0", "--db", filepath.Join(dir, "cp.db"), "--admin-token-file", filepath.Join(dir, "admin"))
	line := first.expect(t, first.stdout, "nsc cp: gRPC on ")
	second := startNSC(t, "cp", "--grpc", "127.0.0.1:0", "--db", filepath.Join(dir, "cp.db"), "--admin-token-file", filepath.Join(dir, "admin"))
	code, _ := second.waitExit(t)
	host, _ := os.Hostname()
	want := fmt.Sprintf("in use by another nsc cp (pid %d on host %s, %s)", first.cmd.Process.Pid, host, strings.TrimPrefix(line, "nsc cp: "))
	second.mu.Lock()
	stderr := strings.Join(second.errOut, "\n")
	second.mu.Unlock()
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("the second nsc cp: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}
