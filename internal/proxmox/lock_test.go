package proxmox

// size is the number of keys held or waited on (tests).
func (k *keyedLock) size() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}
