package proxmox

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// Notes collects what an operation skipped on purpose and the caller should say (Terraform
// shows them as warnings): a seed ISO not deleted because its storage does not exist, say.
// Safe for concurrent use.
type Notes struct {
	mu    sync.Mutex
	lines []string
}

type notesKey struct{}

// WithNotes returns ctx carrying a new Notes, which the backend's operations fill.
func WithNotes(ctx context.Context) (context.Context, *Notes) {
	n := &Notes{}
	return context.WithValue(ctx, notesKey{}, n), n
}

// Lines returns the notes in the order they were made.
func (n *Notes) Lines() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lines...)
}

// note records a note on ctx's Notes (if any) and logs it.
func note(ctx context.Context, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox operation skipped a step", map[string]any{"note": msg})
	if n, ok := ctx.Value(notesKey{}).(*Notes); ok {
		n.mu.Lock()
		n.lines = append(n.lines, msg)
		n.mu.Unlock()
	}
}
