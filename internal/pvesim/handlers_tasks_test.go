package pvesim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// TestTaskArchive_rotatesPast50000Bytes: a node's index is renamed to index.1 once it
// passes 50000 bytes, the older index.1 lost (pve-common src/PVE/RESTEnvironment.pm
// active_workers, lines 363-385); the list reads index, then index.1, each newest first.
func TestTaskArchive_rotatesPast50000Bytes(t *testing.T) {
	s := NewForTest(t, Options{})
	node := s.Nodes[0]
	upid := func(i int) string {
		return fmt.Sprintf("UPID:%s:%08X:%08X:%08X:qmstart:%d:%s:", node, 1000+i, 5000+i, 1789800000+i, 100+i, s.TokenID())
	}
	s.mu.Lock()
	a := &s.nodes[node].archive
	rotations, size, n := 0, 0, 0
	var firstIndex1 int // the number of tasks in index.1 after the first rotation
	for ; rotations < 2; n++ {
		e := archivedTask{upid: upid(n), end: int64(1789800001 + n), status: "OK"}
		a.add(e)
		size += len(e.line())
		if size > archiveMaxSize {
			rotations++
			if len(a.index) != 0 || len(a.index1) == 0 || a.index1[len(a.index1)-1] != e {
				s.mu.Unlock()
				t.Fatalf("rotation %d: index %d lines, index.1 %d lines", rotations, len(a.index), len(a.index1))
			}
			if rotations == 1 {
				firstIndex1 = len(a.index1)
			}
			size = 0
		}
	}
	for i := range 3 { // three more in the new index
		a.add(archivedTask{upid: upid(n + i), end: int64(1789800001 + n + i), status: "OK"})
	}
	n += 3
	kept := len(a.index) + len(a.index1)
	s.mu.Unlock()
	if firstIndex1 < 400 || firstIndex1 > 1000 {
		t.Fatalf("index rotated after %d lines", firstIndex1)
	}

	req, _ := http.NewRequest(http.MethodGet, s.Endpoint+"/api2/json/nodes/"+node+"/tasks?limit=5000", nil)
	req.Header.Set("Authorization", "PVEAPIToken="+s.APIToken)
	resp, err := rawClient(t, s).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v struct {
		Data  []nodeTask `json:"data"`
		Total int        `json:"total"`
	}
	if err := json.Unmarshal(body, &v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if len(v.Data) != kept || v.Total != kept || kept != 3+(n-3-firstIndex1) {
		t.Fatalf("%d entries (total %d) of %d archived, want the %d of index and index.1", len(v.Data), v.Total, n, kept)
	}
	// Newest first, across the two files; the first index.1's tasks are gone.
	for i, e := range v.Data {
		if want := upid(n - 1 - i); e.UPID != want || e.EndTime != int64(1789800001+n-1-i) || e.Status != "OK" {
			t.Fatalf("entry %d = %+v, want %s", i, e, want)
		}
	}
	if last := v.Data[len(v.Data)-1]; last.StartTime != int64(1789800000+firstIndex1) {
		t.Errorf("oldest listed starts at %d, want the first task after the lost index.1", last.StartTime)
	}
}
