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
	for _, args := range [][]string{{"-speed", "0"}, {"-nodes", "bad_node!"}, {"extra"}, {"-listen", "256.0.0.1:1"},
		{"-clone", "0s"}, {"-agent", "-1s"}, {"-status-interval", "-1s"}, {"-upload", "soon"}} {
		if err := run(context.Background(), append([]string{"-listen", "127.0.0.1:0"}, args...), io.Discard, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// The duration flags reach the simulator: a 200 s clone at speed 1000 runs 200 ms, and
// -status-interval 0 lists it live (the nameless mid-clone entry, then its name at once).
func TestRun_durationFlagsApply(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-speed", "1000", "-clone", "200s", "-status-interval", "0"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	var info struct {
		Endpoint string `json:"endpoint"`
		APIToken string `json:"api_token"`
		CAFile   string `json:"ca_file"`
	}
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(info.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	call := func(method, path, form string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, info.Endpoint+"/api2/json"+path, strings.NewReader(form))
		req.Header.Set("Authorization", "PVEAPIToken="+info.APIToken)
		if form != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s %v", method, path, resp.Status, err)
		}
		return out
	}
	start := time.Now()
	upid, _ := call("POST", "/nodes/pve1/qemu/9001/clone", "newid=4321&name=flags&full=1")["data"].(string)
	listed := func() map[string]any {
		for _, e := range call("GET", "/cluster/resources?type=vm", "")["data"].([]any) {
			if m := e.(map[string]any); m["vmid"] == float64(4321) {
				return m
			}
		}
		return nil
	}
	if e := listed(); e["lock"] != "clone" || e["name"] != nil {
		t.Errorf("mid-clone entry %v", e)
	}
	for {
		st := call("GET", "/nodes/pve1/tasks/"+upid+"/status", "")["data"].(map[string]any)
		if st["status"] == "stopped" {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the clone never ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("the clone took %v, less than -clone 200s at -speed 1000", d)
	}
	if e := listed(); e["name"] != "flags" {
		t.Errorf("after the clone, live listing: %v", e)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the server ended with %v", err)
	}
}
