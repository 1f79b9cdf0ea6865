package pvesim

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"
)

// rawClient is an HTTP client that trusts the simulator's CA file.
func rawClient(t testing.TB, s *Sim) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("CA file holds no certificate")
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
}

func TestStart_servesVersionWithTokenOverTLS(t *testing.T) {
	s := NewForTest(t, Options{})
	req, _ := http.NewRequest(http.MethodGet, s.Endpoint+"/api2/json/version", nil)
	req.Header.Set("Authorization", "PVEAPIToken="+s.APIToken)
	resp, err := rawClient(t, s).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(body, &v); err != nil || resp.StatusCode != http.StatusOK || v.Data["version"] != pveVersion {
		t.Fatalf("status %d body %s err %v", resp.StatusCode, body, err)
	}
	if resp.Proto != "HTTP/1.1" {
		t.Errorf("proto %s, want HTTP/1.1 (fact: http1-only)", resp.Proto)
	}
}
