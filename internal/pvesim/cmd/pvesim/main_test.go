package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRun_printsOneJSONLineServesAndStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-nodes", "pve1,pve2", "-speed", "20"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	var info struct {
		Endpoint   string         `json:"endpoint"`
		APIToken   string         `json:"api_token"`
		CAFile     string         `json:"ca_file"`
		Nodes      []string       `json:"nodes"`
		ISOStorage string         `json:"iso_storage"`
		Templates  map[string]int `json:"templates"`
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&info); err != nil {
		t.Fatalf("start-up line %q: %v", line, err)
	}
	if len(info.Nodes) != 2 || info.ISOStorage == "" || info.Templates["debian-13"] == 0 || !strings.HasPrefix(info.APIToken, "root@pam!") {
		t.Errorf("start-up line %+v", info)
	}
	pem, err := os.ReadFile(info.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest(http.MethodGet, info.Endpoint+"/api2/json/nodes/pve2/status", nil)
	req.Header.Set("Authorization", "PVEAPIToken="+info.APIToken)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("node status: %s", resp.Status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if _, err := os.Stat(info.CAFile); !os.IsNotExist(err) {
		t.Errorf("CA file left behind: %v", err)
	}
}

func TestRun_rejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-speed", "0"}, {"-nodes", "bad_node!"}, {"extra"}, {"-listen", "256.0.0.1:1"}} {
		if err := run(context.Background(), append([]string{"-listen", "127.0.0.1:0"}, args...), io.Discard, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
