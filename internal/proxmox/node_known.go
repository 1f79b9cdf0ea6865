package proxmox

import (
	"context"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// CheckNodeKnown reports, with one status read, whether node is a node of the cluster: a
// node Proxmox does not know is a Permanent error. A known node that does not answer (it is
// down, or the read failed for any other reason) is not an error here: its guests are still
// listed, with status unknown.
func (b *Backend) CheckNodeKnown(ctx context.Context, node string) error {
	_, err := b.api.NodeStatus(ctx, node)
	if err != nil && pveapi.IsUnknownNode(err) {
		return Permanentf("node %q is not a node of this cluster (%s)", node, trimNewline(err.Error()))
	}
	return nil
}

func trimNewline(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '.') {
		s = s[:len(s)-1]
	}
	return s
}
