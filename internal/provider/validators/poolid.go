package validators

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.String = poolID{}

// poolIDRE is Proxmox's pve-poolid format (pve-access-control src/PVE/AccessControl.pm
// verify_poolname): letters, digits, '.', '-' and '_', up to three levels joined by '/'.
var poolIDRE = regexp.MustCompile(`^[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}$`)

// PoolID accepts a Proxmox pool id and, when allowEmpty, "" (no pool). A pool Proxmox would
// create also starts each level with a letter (pve-manager PVE/API2/Pool.pm create_pool).
func PoolID(allowEmpty bool) validator.String { return poolID{allowEmpty: allowEmpty} }

type poolID struct{ allowEmpty bool }

func (v poolID) Description(context.Context) string {
	d := "must be a Proxmox pool id: letters, digits, '.', '-' and '_', each level starting with a letter, up to three levels joined by '/'"
	if v.allowEmpty {
		d += `, or "" for no pool`
	}
	return d
}

func (v poolID) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v poolID) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := CheckPoolID(req.ConfigValue.ValueString(), v.allowEmpty); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, summary,
			fmt.Sprintf("Attribute %s %s: %s.", req.Path, v.Description(ctx), err))
	}
}

// CheckPoolID is the PoolID rule.
func CheckPoolID(s string, allowEmpty bool) error {
	switch {
	case s == "" && allowEmpty:
		return nil
	case s == "":
		return fmt.Errorf("the pool id is empty")
	case len(strings.Split(s, "/")) > 3:
		return fmt.Errorf("pool %q is nested more than three levels deep", s)
	case !poolIDRE.MatchString(s):
		return fmt.Errorf("pool %q has a character Proxmox does not allow in a pool id", s)
	}
	for _, level := range strings.Split(s, "/") {
		if c := level[0]; (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return fmt.Errorf("pool %q has a level that does not start with a letter", s)
		}
	}
	return nil
}
