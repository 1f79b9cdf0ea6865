package proxmox

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// A create's placement: the node a VM without one is given, and the clone onto the
// template's node then a migration when the template is node-local (placement.go).

// placeSpec fills the spec's node when it is unset: automatic placement.
func (c *creation) placeSpec(ctx context.Context, res []pveapi.Resource) error {
	if c.s.Node != "" {
		return nil
	}
	n, err := c.b.place(ctx, res, c.s.Name)
	if err != nil {
		return err
	}
	c.s.Node = n
	return nil
}

// cloneTarget decides where the clone runs: the target parameter for the clone call and
// the node the clone lands on. With a template on s.Node, or one whose volumes are all on
// shared storage, the clone goes straight to s.Node (target only when it differs); otherwise
// it lands on the template's node and moveToTarget migrates it afterwards.
func (c *creation) cloneTarget(ctx context.Context, tmplNode string) (target, lands string, err error) {
	s := &c.s
	if s.Node == tmplNode {
		return "", tmplNode, nil
	}
	cfg, err := c.b.api.VMConfig(ctx, tmplNode, s.TemplateVMID)
	if err != nil {
		return "", "", apiErrorf("create", err, "reading the config of template %d on node %s", s.TemplateVMID, tmplNode)
	}
	shared := true
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if !isDiskKey(k) {
			continue
		}
		vol := driveVolume(cfg[k])
		sid, _, ok := strings.Cut(vol, ":")
		if !ok || seen[sid] {
			continue
		}
		seen[sid] = true
		st, err := c.b.api.StorageStatus(ctx, tmplNode, sid)
		if err != nil {
			return "", "", apiErrorf("create", err, "reading storage %s of template %d on node %s", sid, s.TemplateVMID, tmplNode)
		}
		if st.Shared != 1 {
			shared = false
		}
	}
	if shared {
		return s.Node, s.Node, nil
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox template on node-local storage: clone on its node, then migrate", map[string]any{
		"name": s.Name, "template_vmid": s.TemplateVMID, "template_node": tmplNode, "node": s.Node,
	})
	return "", tmplNode, nil
}

// moveToTarget migrates a VM that is not running yet (just cloned on the template's node,
// or adopted there after an interruption) to the spec's node, before the seed upload and
// the start; the config is read again on the target.
func (c *creation) moveToTarget(ctx context.Context) error {
	if c.s.Node == "" || c.node == c.s.Node {
		return nil
	}
	from := c.node
	if err := c.b.migrate(ctx, "create", ID{VMID: c.vmid, Name: c.s.Name}, from, c.s.Node, c.cfg, nil, false, nil); err != nil {
		return err
	}
	c.node = c.s.Node
	cfg, err := c.b.api.VMConfig(ctx, c.node, c.vmid)
	if err != nil {
		return apiErrorf("create", err, "reading the config on node %s after migrating the VM from node %s", c.node, from)
	}
	c.cfg = cfg
	return nil
}
