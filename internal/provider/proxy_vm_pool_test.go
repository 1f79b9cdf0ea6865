package provider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The pool-scoped, privilege-separated token of the setup guide, set up as an administrator
// would: the guide's own pveum commands, each sent to the simulator's API endpoint it
// stands for (pveum is a CLI over the same API, pve-access-control src/PVE/CLI/pveum.pm).

// setupGuide is the setup guide's source.
const setupGuide = "../../templates/guides/proxmox-setup.md.tmpl"

// guidePveum returns the pveum command lines of the guide's pool-scoped setup (section 3,
// before "### Without a pool"), split into words as a shell would.
func guidePveum(t *testing.T) [][]string {
	t.Helper()
	raw, err := os.ReadFile(setupGuide)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	start := strings.Index(s, "## 3. User, roles and token")
	end := strings.Index(s, "### Without a pool")
	if start < 0 || end < start {
		t.Fatal("the setup guide has no section 3 with a pool")
	}
	var out [][]string
	for _, line := range strings.Split(s[start:end], "\n") {
		if strings.HasPrefix(line, "pveum ") {
			out = append(out, shellWords(t, line))
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d pveum lines in the guide's section 3", len(out))
	}
	return out
}

// shellWords splits a command line as sh does for words, single and double quotes.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; ch {
		case '\'', '"':
			j := strings.IndexByte(line[i+1:], ch)
			if j < 0 {
				t.Fatalf("unbalanced quote in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ' ', '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// simAdmin sends API requests to the simulator with its root token.
type simAdmin struct {
	t    *testing.T
	sim  *pvesim.Sim
	http *http.Client
}

func newSimAdmin(t *testing.T, sim *pvesim.Sim) *simAdmin {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(sim.CAPEM))
	return &simAdmin{t: t, sim: sim, http: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}
}

// call sends one request and decodes the data of a 200 into out; it returns the status and
// Proxmox's message.
func (a *simAdmin) call(method, path string, form url.Values, out any) (int, string) {
	a.t.Helper()
	u := a.sim.Endpoint + "/api2/json" + path
	var body io.Reader
	if method == "POST" || method == "PUT" {
		body = strings.NewReader(form.Encode())
	} else if len(form) > 0 {
		u += "?" + form.Encode()
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", "PVEAPIToken="+a.sim.APIToken)
	resp, err := a.http.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Data    json.RawMessage `json:"data"`
		Message string          `json:"message"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &env)
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			a.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode, strings.TrimSpace(env.Message)
}

func (a *simAdmin) ok(method, path string, form url.Values, out any) {
	a.t.Helper()
	if code, msg := a.call(method, path, form, out); code != http.StatusOK {
		a.t.Fatalf("%s %s %v: %d %s", method, path, form, code, msg)
	}
}

// pveum runs one pveum command through the API endpoint it stands for: options become
// the request's parameters. It returns the secret of a token it added.
func (a *simAdmin) pveum(words []string) string {
	a.t.Helper()
	opts := url.Values{}
	var args []string
	for i := 1; i < len(words); i++ {
		if k, ok := strings.CutPrefix(words[i], "--"); ok && i+1 < len(words) {
			opts.Set(k, words[i+1])
			i++
			continue
		}
		args = append(args, words[i])
	}
	cmd := strings.Join(args, " ")
	switch {
	case strings.HasPrefix(cmd, "pool add "):
		opts.Set("poolid", args[2])
		a.ok("POST", "/pools", opts, nil)
	case strings.HasPrefix(cmd, "role add "):
		opts.Set("roleid", args[2])
		a.ok("POST", "/access/roles", opts, nil)
	case strings.HasPrefix(cmd, "user add "):
		opts.Set("userid", args[2])
		a.ok("POST", "/access/users", opts, nil)
	case strings.HasPrefix(cmd, "user token add "):
		var tok struct {
			Value string `json:"value"`
		}
		a.ok("POST", "/access/users/"+url.PathEscape(args[3])+"/token/"+url.PathEscape(args[4]), opts, &tok)
		return tok.Value
	case strings.HasPrefix(cmd, "user token permissions "):
		opts.Set("userid", args[3]+"!"+args[4])
		var perms map[string]map[string]int
		a.ok("GET", "/access/permissions", opts, &perms)
		if len(perms[opts.Get("path")]) == 0 {
			a.t.Errorf("%s: no privileges", strings.Join(words, " "))
		}
	case strings.HasPrefix(cmd, "acl modify "):
		opts.Set("path", args[2])
		a.ok("PUT", "/access/acl", opts, nil)
	default:
		a.t.Fatalf("no API call for %q", strings.Join(words, " "))
	}
	return ""
}

// guideToken runs the guide's pool-scoped setup (every pveum line, skip: those whose line
// contains it) and returns the token it made, "<user>@<realm>!<tokenid>=<secret>".
func guideToken(t *testing.T, sim *pvesim.Sim, skip string) string {
	t.Helper()
	a := newSimAdmin(t, sim)
	var token string
	for _, w := range guidePveum(t) {
		line := strings.Join(w, " ")
		if skip != "" && strings.Contains(line, skip) {
			continue
		}
		if secret := a.pveum(w); secret != "" {
			token = w[4] + "!" + w[5] + "=" + secret
		}
	}
	if !strings.HasPrefix(token, "proxy-operator@pve!terraform=") {
		t.Fatalf("the guide made no token proxy-operator@pve!terraform (got %q)", token)
	}
	return token
}

// scopedEnv is env with the guide's token and its pool as the provider's default.
func scopedEnv(env *testEnv, token string) (*testEnv, string) {
	scoped := *env
	scoped.Token = token
	return &scoped, "  pool = \"proxies\"\n"
}

// TestAccProxyVM_poolScopedToken: with the privilege-separated token the setup guide's
// pveum commands make (VM privileges on /pool/proxies only), the whole lifecycle runs: the
// clone goes into the pool, the next plan is empty, an update is in place, an import plans
// nothing, the destroy leaves nothing; proxy_health finds no privilege missing.
func TestAccProxyVM_poolScopedToken(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("sets up users, tokens and ACLs on the simulator")
	}
	c := newCluster(t, env) // the root token: sees everything, for the checks
	scoped, poolLine := scopedEnv(env, guideToken(t, env.Sim, ""))
	name := vmName("pool")
	cfg := func(cores int) string {
		// No timeouts block: an import cannot read it back, and the import block below plans nothing.
		return vmProviderConfig(scoped, poolLine) + healthConfig("") + vmResourceBare(env, name, fmt.Sprintf(`
  cores      = %d
  memory_mib = 512`, cores))
	}
	vmid := statecheck.CompareValue(compare.ValuesSame())
	inPool := func(want string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			id, err := vmidOf(s, vmAddr)
			if err != nil {
				return err
			}
			if got := env.Sim.PoolOf(id); got != want {
				return fmt.Errorf("VM %d is in pool %q, want %q", id, got, want)
			}
			return nil
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(c.checkGone(name), func(*terraform.State) error {
			var pools []struct {
				Members []map[string]any `json:"members"`
			}
			newSimAdmin(t, env.Sim).ok("GET", "/pools", url.Values{"poolid": {"proxies"}}, &pools)
			if len(pools) != 1 || len(pools[0].Members) != 0 {
				return fmt.Errorf("pool proxies still holds %v", pools)
			}
			return nil
		}),
		Steps: []resource.TestStep{
			{
				Config: cfg(1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("pool"), knownvalue.StringExact("proxies")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("pool"), knownvalue.StringExact("proxies")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
					healthNode(0, "reason", knownvalue.StringExact("Reachable")),
					healthNode(0, "missing_privileges", knownvalue.ListExact([]knownvalue.Check{})),
				},
				Check: resource.ComposeAggregateTestCheckFunc(inPool("proxies"), c.checkOneVM(vmAddr, name)),
			},
			{
				Config:           cfg(1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: cfg(2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("pool"), knownvalue.StringExact("proxies")),
				},
				Check: inPool("proxies"),
			},
			{
				ResourceName:            vmAddr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: importIgnore,
			},
			{
				// An import block with the configuration: no cloud_init, nothing unread to
				// record, and the pool is read back: nothing to do.
				ResourceName:    vmAddr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithID,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionNoop),
				}},
			},
		},
	})
}

// TestAccProxyVM_poolScopedTokenRefused: the guide's token is refused, with Proxmox's 403
// quoted and the missing privilege named with its path, on a VM outside its pool (import,
// data source read) and on a template it was not granted (at plan time), and nothing in the
// cluster changes.
func TestAccProxyVM_poolScopedTokenRefused(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("sets up users, tokens and ACLs on the simulator")
	}
	scoped, poolLine := scopedEnv(env, guideToken(t, env.Sim, ""))
	// A proxy VM outside the pool, made with the simulator's root token (one provider
	// process serves every provider configuration of an in-process test, so it is made
	// here rather than by a second provider block).
	name := vmName("outside")
	root, err := pveapi.New(pveapi.Options{Endpoint: env.Endpoint, Token: env.Token, CAPEM: env.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	uid, err := newUID()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	outside, err := proxmox.New(root, proxmox.Config{Nodes: env.Nodes, ISOStorage: env.ISOStorage}).Create(ctx,
		proxmox.Spec{Name: name, UID: uid, TemplateVMID: env.Templates[imageKey(env)], Cores: 1, MemoryMiB: 512}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vmid := strconv.Itoa(outside.ID.VMID)
	before, _ := env.Sim.VM(outside.ID.VMID)
	guests := len(env.Sim.State().VMs)
	unchanged := func(*terraform.State) error {
		after, ok := env.Sim.VM(outside.ID.VMID)
		if !ok || after.Power != before.Power || after.Description != before.Description || after.Config["cores"] != before.Config["cores"] {
			return fmt.Errorf("the VM outside the pool changed: %+v, was %+v", after, before)
		}
		if n := len(env.Sim.State().VMs); n != guests {
			return fmt.Errorf("%d guests, want %d: something was made", n, guests)
		}
		return nil
	}
	// Proxmox's refusal quoted, then the privilege and its path named. Terraform wraps a
	// diagnostic's lines: a space of the text may be a newline.
	refused := func(vmid string) *regexp.Regexp {
		msg := strings.Replace(fixture.MustLoad("err_permission_vm_audit").Message(), "199999", vmid, 1)
		return regexp.MustCompile(`(?s)` + strings.ReplaceAll(regexp.QuoteMeta(msg), " ", `\s+`) + `.*lacks\s+VM\.Audit\s+on\s+/vms/` + vmid)
	}
	base := vmProviderConfig(scoped, poolLine)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// Import the VM outside the pool.
				Config: base + vmResourceBare(env, name, `
  cores      = 1
  memory_mib = 512`),
				ResourceName:  vmAddr,
				ImportState:   true,
				ImportStateId: "vms/" + vmid + "/" + name,
				ExpectError:   refused(vmid),
			},
			{
				// A data source read of it.
				Config:      base + `data "proxy_vm" "outside" { vmid = ` + vmid + " }\n",
				ExpectError: refused(vmid),
			},
			{
				// A template the token was not granted: refused at plan time, nothing made.
				Config: base + fmt.Sprintf(`
resource "proxy_vm" "test" {
  name          = %q
  template_vmid = 9000
  cores         = 1
  memory_mib    = 512
}
`, vmName("tmpl")),
				ExpectError: refused("9000"),
			},
			{
				// Nothing changed: the VM outside the pool is as it was, no guest was made.
				Config: base,
				Check:  unchanged,
			},
		},
	})
}

// TestAccHealthDataSource_missingPrivilegeNamed: the guide's setup without the token's grant
// on the bridge (its user keeps it: a privilege-separated token has only what both hold):
// proxy_health reports Forbidden and names SDN.Use on the bridge's path.
func TestAccHealthDataSource_missingPrivilegeNamed(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("sets up users, tokens and ACLs on the simulator")
	}
	scoped, poolLine := scopedEnv(env, guideToken(t, env.Sim, "/sdn/zones/localnetwork/vmbr0 --tokens"))
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: vmProviderConfig(scoped, poolLine) + healthConfig(""),
			ConfigStateChecks: append(healthChecks(healthWant{env.Nodes[0], "Forbidden",
				`lacks privileges the provider needs: SDN\.Use on /sdn/zones/localnetwork/vmbr0 \(to attach the VMs' network to vmbr0\)`}),
				healthNode(0, "missing_privileges", knownvalue.ListExact([]knownvalue.Check{
					knownvalue.StringExact("SDN.Use on /sdn/zones/localnetwork/vmbr0"),
				})),
			),
		}},
	})
}

// TestAccProxyVM_poolMove: a pool change is made in place (PUT /pools), never a
// replacement; pool = "" takes the VM out of its pool and overrides the provider's pool;
// unset, the VM keeps the pool it is in. With the simulator's root token, which may move
// VMs between pools.
func TestAccProxyVM_poolMove(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("creates pools on the simulator")
	}
	a := newSimAdmin(t, env.Sim)
	for _, p := range []string{"blue", "green"} {
		a.ok("POST", "/pools", url.Values{"poolid": {p}}, nil)
	}
	c := newCluster(t, env)
	name := vmName("move")
	cfg := func(provider, pool string) string {
		return vmProviderConfig(env, provider) + vmResourceBare(env, name, "  cores = 1\n  memory_mib = 512\n"+pool)
	}
	vmid := statecheck.CompareValue(compare.ValuesSame())
	poolIs := func(want string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			id, err := vmidOf(s, vmAddr)
			if err != nil {
				return err
			}
			if got := env.Sim.PoolOf(id); got != want {
				return fmt.Errorf("VM %d is in pool %q, want %q", id, got, want)
			}
			return nil
		}
	}
	step := func(config string, action plancheck.ResourceActionType, state knownvalue.Check, pool string) resource.TestStep {
		return resource.TestStep{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, action),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("pool"), state),
			},
			Check: poolIs(pool),
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			step(cfg(`  pool = "blue"`+"\n", ""), plancheck.ResourceActionCreate, knownvalue.StringExact("blue"), "blue"),
			step(cfg(`  pool = "blue"`+"\n", `  pool = "green"`), plancheck.ResourceActionUpdate, knownvalue.StringExact("green"), "green"),
			step(cfg(`  pool = "blue"`+"\n", `  pool = ""`), plancheck.ResourceActionUpdate, knownvalue.StringExact(""), ""),
			step(cfg(`  pool = "blue"`+"\n", `  pool = ""`), plancheck.ResourceActionNoop, knownvalue.StringExact(""), ""),
			// Unset, without a provider pool: the VM stays where it is.
			step(cfg("", ""), plancheck.ResourceActionNoop, knownvalue.StringExact(""), ""),
			// The provider's pool: moved in.
			step(cfg(`  pool = "blue"`+"\n", ""), plancheck.ResourceActionUpdate, knownvalue.StringExact("blue"), "blue"),
			{
				// Moved out of the pool outside Terraform: drift, moved back in place.
				PreConfig: func() {
					res, err := c.resources()
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range res {
						if r.Name == name {
							a.ok("PUT", "/pools", url.Values{"poolid": {"blue"}, "vms": {strconv.Itoa(r.VMID)}, "delete": {"1"}}, nil)
						}
					}
				},
				Config: cfg(`  pool = "blue"`+"\n", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid"))},
				Check:             poolIs("blue"),
			},
			{
				// The pool is read back; machine_type, unset here, is resolved from the sizes.
				ResourceName:            vmAddr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: append(slices.Clone(importIgnore), "machine_type"),
			},
		},
	})
}

// TestAccProxyVM_poolValidated: a pool id Proxmox would refuse fails the plan on the
// attribute, on the resource and on the provider.
func TestAccProxyVM_poolValidated(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	for _, tc := range []struct{ provider, resource, want string }{
		{"", `  pool = "a,vms=100"`, `Attribute pool must be a Proxmox pool id`},
		{"", `  pool = "a/b/c/d"`, `nested\s+more\s+than\s+three\s+levels\s+deep`},
		{`  pool = "9lives"` + "\n", "", `level\s+that\s+does\s+not\s+start\s+with\s+a\s+letter`},
		{`  pool = ""` + "\n", "", `the\s+pool\s+id\s+is\s+empty`},
	} {
		resource.UnitTest(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps: []resource.TestStep{{
				Config:      vmProviderConfig(env, tc.provider) + vmResourceBare(env, vmName("bad"), "  cores = 1\n  memory_mib = 512\n"+tc.resource),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(tc.want),
			}},
		})
	}
}

// TestPoolValueAndChange: "" and null both mean no pool; a configured "" is kept as "".
func TestPoolValueAndChange(t *testing.T) {
	for _, tc := range []struct {
		pool  string
		prior types.String
		want  types.String
	}{
		{"", types.StringNull(), types.StringNull()},
		{"", types.StringValue(""), types.StringValue("")},
		{"", types.StringValue("blue"), types.StringNull()},
		{"blue", types.StringNull(), types.StringValue("blue")},
		{"green", types.StringValue("blue"), types.StringValue("green")},
		{"", types.StringUnknown(), types.StringNull()},
	} {
		if got := poolValue(tc.pool, tc.prior); !got.Equal(tc.want) {
			t.Errorf("poolValue(%q, %s) = %s, want %s", tc.pool, tc.prior, got, tc.want)
		}
	}
	for _, tc := range []struct {
		prior, plan types.String
		move        bool
		to, from    string
	}{
		{types.StringNull(), types.StringValue(""), false, "", ""},
		{types.StringValue(""), types.StringNull(), false, "", ""},
		{types.StringNull(), types.StringValue("blue"), true, "blue", ""},
		{types.StringValue("blue"), types.StringValue(""), true, "", "blue"},
		{types.StringValue("blue"), types.StringValue("green"), true, "green", "blue"},
		{types.StringValue("blue"), types.StringUnknown(), false, "", ""},
	} {
		to, from := poolChange(tc.prior, tc.plan)
		if (to != nil) != tc.move || (to != nil && (*to != tc.to || from != tc.from)) {
			t.Errorf("poolChange(%s, %s) = %v, %q", tc.prior, tc.plan, to, from)
		}
	}
}
