package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestAccProxyVM_identity (Terraform 1.12+): a created VM carries the identity {vmid, name}
// of its ID, and an import block with that identity imports it with an empty plan.
func TestAccProxyVM_identity(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("ident")
	cfg := env.ProviderConfig("") + vmResourceBare(env, name, `
  cores      = 2
  memory_mib = 768`)

	tfresource.ParallelTest(t, tfresource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []tfresource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity(vmAddr, map[string]knownvalue.Check{
						"vmid": knownvalue.Int64Func(func(v int64) error {
							if v < 100 {
								return fmt.Errorf("identity vmid %d is not a VMID", v)
							}
							return nil
						}),
						"name": knownvalue.StringExact(name),
					}),
					statecheck.ExpectIdentityValueMatchesState(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectIdentityValueMatchesState(vmAddr, tfjsonpath.New("name")),
				},
			},
			{
				// import { to = proxy_vm.test, identity = { vmid = ..., name = ... } }
				ResourceName:    vmAddr,
				ImportState:     true,
				ImportStateKind: tfresource.ImportBlockWithResourceIdentity,
				ImportPlanChecks: tfresource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionNoop),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("name"), knownvalue.StringExact(name)),
				}},
			},
		},
	})
}

// identityOf builds an import block's identity value (name nil: not set).
func identityOf(t *testing.T, vmid int64, name *string) *tfsdk.ResourceIdentity {
	t.Helper()
	ctx := context.Background()
	var is resource.IdentitySchemaResponse
	(&proxyVMResource{}).IdentitySchema(ctx, resource.IdentitySchemaRequest{}, &is)
	n := tftypes.NewValue(tftypes.String, nil)
	if name != nil {
		n = tftypes.NewValue(tftypes.String, *name)
	}
	raw := tftypes.NewValue(is.IdentitySchema.Type().TerraformType(ctx),
		map[string]tftypes.Value{"vmid": tftypes.NewValue(tftypes.Number, vmid), "name": n})
	return &tfsdk.ResourceIdentity{Schema: is.IdentitySchema, Raw: raw}
}

// TestImportState_byIdentity: an identity with the vmid alone, and with the vmid and the
// VM's name, finds the VM and yields its full identity; a name the VM at that vmid does not
// carry is refused by the lookup, and a vmid out of range or a malformed name on the
// identity attribute, before any request.
func TestImportState_byIdentity(t *testing.T) {
	t.Parallel()
	e := newImportEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema := proxyVMSchema(ctx)
	for _, name := range []*string{nil, &e.name} {
		ref, diags := importRefFromIdentity(ctx, identityOf(t, int64(e.vmid), name))
		if diags.HasError() {
			t.Fatalf("identity (name %v): %v", name, diags)
		}
		vm, _, diags := e.res.importVM(ctx, ref)
		if diags.HasError() || vm.ID.VMID != e.vmid || vm.ID.Name != e.name {
			t.Fatalf("import by identity (name %v): %+v %v", name, vm.ID, diags)
		}
		// The identity written back is the VM's, name included.
		st := tfsdk.State{Schema: schema, Raw: tftypes.NewValue(schema.Type().TerraformType(ctx), nil)}
		var nullTimeouts timeouts.Value
		if d := st.GetAttribute(ctx, path.Root("timeouts"), &nullTimeouts); d.HasError() {
			t.Fatal(d)
		}
		m, _ := importedModel(vm, &e.cfg, 0, nullTimeouts)
		if d := st.Set(ctx, &m); d.HasError() {
			t.Fatal(d)
		}
		out := identityOf(t, 1, nil)
		if d := setIdentity(ctx, st, out); d.HasError() {
			t.Fatal(d)
		}
		var got proxyVMIdentity
		out.Get(ctx, &got)
		if got.VMID.ValueInt64() != int64(e.vmid) || got.Name.ValueString() != e.name {
			t.Fatalf("identity after import: %+v, want %d %s", got, e.vmid, e.name)
		}
	}
	other := "proxy-other"
	ref, diags := importRefFromIdentity(ctx, identityOf(t, int64(e.vmid), &other))
	if diags.HasError() {
		t.Fatal(diags)
	}
	if _, _, diags := e.res.importVM(ctx, ref); !diags.HasError() || !strings.Contains(fmt.Sprint(diags), other) {
		t.Fatalf("an identity naming another VM was not refused: %v", diags)
	}
	for _, bad := range []struct {
		vmid int64
		name string
		want string
	}{{42, "", "between 100 and 999999999"}, {int64(e.vmid), "Not_A_Name", "DNS label"}} {
		var n *string
		if bad.name != "" {
			n = &bad.name
		}
		if _, diags := importRefFromIdentity(ctx, identityOf(t, bad.vmid, n)); !diags.HasError() || !strings.Contains(fmt.Sprint(diags), bad.want) {
			t.Errorf("identity %d %q: %v, want an error saying %q", bad.vmid, bad.name, diags, bad.want)
		}
	}
}
