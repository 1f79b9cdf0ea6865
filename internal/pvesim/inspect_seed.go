package pvesim

import "time"

// CDROMSeed returns what the NoCloud seed on the VM's CD-ROM drives holds: what its guest
// reads at its next boot with a new instance id (GuestSeed is what it read at its last).
func (s *Sim) CDROMSeed(vmid int) (SeedFiles, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	v := s.vms[vmid]
	if v == nil {
		return SeedFiles{}, false
	}
	sf := s.seedOf(v)
	if sf == nil {
		return SeedFiles{}, false
	}
	return *sf, true
}
