package proxmox

import "hash/fnv"

// maxProbes is how many VMIDs Create probes before the range counts as exhausted (decision: vmid-function).
const maxProbes = 32

// vmidFor is min + (fnv1a64(uid) + attempt) mod (max - min + 1), the operator's function
// (decision: vmid-function), computed without overflow.
func vmidFor(uid string, attempt, lo, hi int) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	n := uint64(hi - lo + 1)
	return lo + int((h.Sum64()%n+uint64(attempt)%n)%n)
}

// ProbeVMID is the VMID a Create of the allocation key allocKey tries at attempt
// (0 to 31) in the range lo to hi: where an interrupted create of that name is looked for.
func ProbeVMID(allocKey string, attempt, lo, hi int) int { return vmidFor(allocKey, attempt, lo, hi) }
