package provider

import "context"

// readGone returns the recorded reason, "" when none.
func readGone(ctx context.Context, p privateGetter) string {
	return readGoneRecord(ctx, p).Reason
}
