package pvesim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The admin API lives under /pvesim (outside /api2/json, which the real API owns), behind
// the same token. Bodies are JSON; answers are {"data": ...} like the API's.
//
//	GET    /pvesim/info                    start-up details (endpoint, token, CA file...)
//	GET    /pvesim/stats                   request counts; DELETE resets them
//	GET    /pvesim/state                   State snapshot
//	GET    /pvesim/faults                  faults; POST a Fault (answers its id); DELETE all
//	DELETE /pvesim/faults/{id}             one fault
//	POST   /pvesim/vms                     AddVM(VMSpec)
//	DELETE /pvesim/vms/{vmid}              DeleteVM
//	POST   /pvesim/vms/{vmid}/state        SetVMState(VMPatch)
//	POST   /pvesim/vms/{vmid}/move         MoveVM {"target"}: an HA recovery (the config only)
//	GET    /pvesim/vms/{vmid}/seed         GuestSeed
//	POST   /pvesim/nodes/{node}/down|up    SetNodeDown
//	POST   /pvesim/deny, /pvesim/allow     Deny/Allow a Privilege {"path","privilege"}
func (s *Sim) handleAdmin(req *http.Request, p string) *response {
	segs := strings.Split(trimSlash(p), "/")
	m := req.Method
	decode := func(v any) *response {
		b, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		if err != nil {
			return apiError(400, "cannot read body")
		}
		if err := json.Unmarshal(b, v); err != nil {
			return apiError(400, "invalid JSON: "+err.Error())
		}
		return nil
	}
	vmidOf := func(seg string) (int, *response) {
		id, err := strconv.Atoi(seg)
		if err != nil {
			return 0, apiError(400, fmt.Sprintf("invalid vmid '%s'", seg))
		}
		return id, nil
	}
	fail := func(err error) *response {
		if err != nil {
			return apiError(400, err.Error())
		}
		return okData(nil)
	}
	if r := s.adminMove(m, segs, decode); r != nil {
		return r
	}
	switch {
	case m == "GET" && len(segs) == 1 && segs[0] == "info":
		return okData(s.Info())
	case len(segs) == 1 && segs[0] == "stats":
		switch m {
		case "GET":
			return okData(s.Stats())
		case "DELETE":
			s.ResetStats()
			return okData(nil)
		}
	case m == "GET" && len(segs) == 1 && segs[0] == "state":
		return okData(s.State())
	case len(segs) == 1 && segs[0] == "faults":
		switch m {
		case "GET":
			return okData(s.Faults())
		case "POST":
			var f Fault
			if r := decode(&f); r != nil {
				return r
			}
			return okData(s.InjectFault(f))
		case "DELETE":
			s.ClearFaults()
			return okData(nil)
		}
	case m == "DELETE" && len(segs) == 2 && segs[0] == "faults":
		if !s.RemoveFault(segs[1]) {
			return apiError(404, fmt.Sprintf("no fault '%s'", segs[1]))
		}
		return okData(nil)
	case m == "POST" && len(segs) == 1 && segs[0] == "vms":
		var spec VMSpec
		if r := decode(&spec); r != nil {
			return r
		}
		return fail(s.AddVM(spec))
	case m == "DELETE" && len(segs) == 2 && segs[0] == "vms":
		id, r := vmidOf(segs[1])
		if r != nil {
			return r
		}
		return fail(s.DeleteVM(id))
	case m == "POST" && len(segs) == 3 && segs[0] == "vms" && segs[2] == "state":
		id, r := vmidOf(segs[1])
		if r != nil {
			return r
		}
		var patch VMPatch
		if r := decode(&patch); r != nil {
			return r
		}
		return fail(s.SetVMState(id, patch))
	case m == "GET" && len(segs) == 3 && segs[0] == "vms" && segs[2] == "seed":
		id, r := vmidOf(segs[1])
		if r != nil {
			return r
		}
		sf, ok := s.GuestSeed(id)
		if !ok {
			return apiError(404, fmt.Sprintf("no seed read by VM %d", id))
		}
		return okData(sf)
	case m == "POST" && len(segs) == 3 && segs[0] == "nodes" && (segs[2] == "down" || segs[2] == "up"):
		return fail(s.SetNodeDown(segs[1], segs[2] == "down"))
	case m == "POST" && len(segs) == 1 && (segs[0] == "deny" || segs[0] == "allow"):
		var p Privilege
		if r := decode(&p); r != nil {
			return r
		}
		if p.Path == "" || p.Privilege == "" {
			return apiError(400, "path and privilege are required")
		}
		if segs[0] == "deny" {
			s.Deny(p.Path, p.Privilege)
		} else {
			s.Allow(p.Path, p.Privilege)
		}
		return okData(nil)
	}
	return notImplemented(m, "/pvesim"+p)
}
