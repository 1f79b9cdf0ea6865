package provider

import (
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// The facts of the documentation that can drift from the code: the seed ISO's
// name, the mark's lines and the VMID rule are checked here against internal/proxmox; the
// tested CLI range against the GNUmakefile by internal/reporefs (TestDocs_testedCLIs).

// docsPage reads a generated page under docs/.
func docsPage(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markKeysWritten are the keys of every mark line this provider writes: the mark of a VM
// still being created with every optional line, from the functions that write them, and
// any other MarkKey constant internal/proxmox declares (a line written elsewhere).
func markKeysWritten(t *testing.T) []string {
	t.Helper()
	lines := proxmox.CreatingMark([]byte("0123456789abcdef0123456789abcdef"),
		proxmox.MarkLines{UID: "u", CreatedAt: time.Unix(0, 0), Namespace: "ns"}, 100000, "proxy-a") +
		proxmox.FormatMarkExtra(proxmox.Spec{UserDataDigest: "hmac-sha256:00", NetworkDigest: "sha256:00"})
	keys := map[string]bool{}
	for _, l := range strings.Split(lines, "\n") {
		if k, _, ok := strings.Cut(l, "="); ok {
			keys[k] = true
		}
	}
	files, err := filepath.Glob(filepath.Join("..", "proxmox", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no internal/proxmox sources (%v)", err)
	}
	constRE := regexp.MustCompile(`(?m)^\s*(?:const\s+)?MarkKey\w*\s*=\s*"(proxy-operator-[a-z0-9-]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range constRE.FindAllStringSubmatch(string(b), -1) {
			keys[m[1]] = true
		}

	}
	// An HA rule's mark is a line of the rule's comment, not of a VM's description: the
	// proxy_ha_rule page documents it.
	delete(keys, proxmox.MarkKeyHARule)
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDocs_markLines: the table of mark lines in "How proxy_vm works" lists exactly the keys
// the code writes.
func TestDocs_markLines(t *testing.T) {
	want := markKeysWritten(t)
	if len(want) < 8 {
		t.Fatalf("the code writes %d mark keys (%v): the test would prove too little", len(want), want)
	}
	page := docsPage(t, "guides/lifecycle.md")
	rowRE := regexp.MustCompile("(?m)^\\| `(proxy-operator-[a-z0-9-]+)=")
	var got []string
	for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
		got = append(got, m[1])
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("docs/guides/lifecycle.md's mark table lists\n  %v\nthe code writes\n  %v\n(edit the table in templates/guides/lifecycle.md.tmpl and run make generate)", got, want)
	}
	if strings.Contains(strings.ToLower(page), "three lines in the vm") {
		t.Error("docs/guides/lifecycle.md still counts the mark's lines")
	}
}

// TestDocs_seedName: the pages that name the seed ISO name the one the code uploads,
// generations included; `<name>-seed.iso` appears only as the proxy operator's.
func TestDocs_seedName(t *testing.T) {
	const uid = "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10"
	if got := proxmox.SeedFile("<name>", "<uid>"); got != "<name>-<uid>-seed.iso" {
		t.Fatalf("the code names a seed %q: update the docs and this test", got)
	}
	if gen, ok := proxmox.SeedGeneration("s:iso/proxy-a-"+uid+"-2-seed.iso", "proxy-a", uid); !ok || gen != 2 {
		t.Fatalf("the code does not read <name>-<uid>-<g>-seed.iso as generation g (%d, %v): update the docs and this test", gen, ok)
	}
	index := docsPage(t, "index.md")
	for _, want := range []string{"`<name>-<uid>-seed.iso`", "`<name>-<uid>-<g>-seed.iso`"} {
		if !strings.Contains(index, want) {
			t.Errorf("docs/index.md's glossary does not name the seed ISO %s", want)
		}
	}
	for _, rel := range []string{"index.md", "guides/proxmox-setup.md", "guides/acceptance-tests.md", "resources/vm.md", "guides/lifecycle.md", "data-sources/vms.md"} {
		page := docsPage(t, rel)
		if !strings.Contains(page, "<name>-<uid>-") {
			t.Errorf("docs/%s does not name the seed ISO <name>-<uid>-seed.iso", rel)
		}
		for i := 0; ; {
			j := strings.Index(page[i:], "<name>-seed.iso")
			if j < 0 {
				break
			}
			at := i + j
			ctx := page[max(0, at-160):min(len(page), at+80)]
			if !strings.Contains(ctx, "operator") {
				t.Errorf("docs/%s names <name>-seed.iso, which only the proxy operator writes, without saying so: %q", rel, ctx)
			}
			i = at + 1
		}
	}
}

// TestDocs_vmidRule: the VMID a create probes is min + (fnv1a64(key) + attempt) mod size,
// key the name's UUID version 5 in uid_namespace, as "How proxy_vm works" writes it and the
// index says (name and uid_namespace, not the uid).
func TestDocs_vmidRule(t *testing.T) {
	const lo, hi = 100000, 199999
	for _, c := range []struct{ ns, name string }{{"", "proxy-a"}, {"team-payments", "proxy-a"}, {"", "proxy-b"}} {
		key := uidFor(c.ns, c.name)
		h := fnv.New64a()
		_, _ = h.Write([]byte(key))
		for attempt := range 3 {
			want := lo + int((h.Sum64()+uint64(attempt))%uint64(hi-lo+1))
			if got := proxmox.ProbeVMID(key, attempt, lo, hi); got != want {
				t.Errorf("namespace %q name %q attempt %d: the code probes VMID %d, the documented rule gives %d", c.ns, c.name, attempt, got, want)
			}
		}
	}
	if uidFor("", "proxy-a") == uidFor("team-payments", "proxy-a") {
		t.Error("the allocation key does not depend on uid_namespace, as the docs say it does")
	}
	guide := docsPage(t, "guides/lifecycle.md")
	if !strings.Contains(guide, "`vmid = min + (fnv1a64(uid) + attempt) mod (max - min + 1)`") || !strings.Contains(guide, "UUID version 5\nof `name` in `uid_namespace`") {
		t.Error("docs/guides/lifecycle.md no longer writes the VMID rule this test checks")
	}
	index := docsPage(t, "index.md")
	if !strings.Contains(index, "Each VM's VMID is derived from its `name` and the provider's `uid_namespace`") {
		t.Error("docs/index.md's VMIDs section does not say the VMID derives from the name and uid_namespace")
	}
	if strings.Contains(index, "derived from its `uid`") {
		t.Error("docs/index.md says the VMID derives from the uid: it derives from the name and uid_namespace")
	}
}

// TestDocs_restartRow: the row of proxy_vm's "What a change does" table that restarts the VM
// names exactly the attributes of proxmox.RestartOptions, as the descriptions derived from
// them do.
func TestDocs_restartRow(t *testing.T) {
	page := docsPage(t, "resources/vm.md")
	var row string
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "| `") && strings.Contains(l, "**restarted** gracefully") {
			row = l
		}
	}
	if row == "" {
		t.Fatal("docs/resources/vm.md has no row of the VM restarted gracefully in What a change does")
	}
	cell := strings.Split(row, "|")[1]
	var got []string
	for _, m := range regexp.MustCompile("`([a-z_0-9]+)`").FindAllStringSubmatch(cell, -1) {
		if m[1] != "machine_type" {
			got = append(got, m[1])
		}
	}
	var want []string
	for _, o := range proxmox.RestartOptions {
		want = append(want, o.Attr)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the restart row names %v, the restart options are %v (edit templates/resources/vm.md.tmpl)", got, want)
	}
}

// TestDocs_resourcePageSize: the proxy_vm page stays one a reader can take in (at most 35 KB);
// mechanics belong in the guides.
func TestDocs_resourcePageSize(t *testing.T) {
	if n := len(docsPage(t, "resources/vm.md")); n > 35000 {
		t.Errorf("docs/resources/vm.md is %d bytes, over 35000: move mechanics to a guide", n)
	}
}
