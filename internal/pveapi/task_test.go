package pveapi

import "fmt"

// String renders the UPID back in Proxmox's format (the round trip of the UPID fixtures).
func (u UPID) String() string {
	return fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", u.Node, u.PID, u.PStart, u.StartTime, u.Type, u.ID, u.User)
}
