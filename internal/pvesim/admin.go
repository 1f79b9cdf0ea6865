package pvesim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// handleAdmin answers the admin API under /pvesim (outside /api2/json, which the real API
// owns), behind the same token; bodies are JSON, answers {"data": ...} like the API's.
// adminRoutes routes it; internal/pvesim/README.md lists its endpoints.
func (s *Sim) handleAdmin(req *http.Request, p string) *response {
	segs := strings.Split(trimSlash(p), "/")
	for _, rt := range adminRoutes {
		if vars, ok := rt.match(req.Method, segs); ok {
			return rt.h(s, &adminCall{req: req, vars: vars})
		}
	}
	return notImplemented(req.Method, "/pvesim"+p)
}

// adminRoute is one admin endpoint: a method and a path of segments, "{name}" matching any
// one segment as variable name.
type adminRoute struct {
	method string
	path   string
	h      func(s *Sim, a *adminCall) *response
}

// match reports whether the route serves method on segs, with the path's variables.
func (rt adminRoute) match(method string, segs []string) (map[string]string, bool) {
	tmpl := strings.Split(rt.path, "/")
	if method != rt.method || len(tmpl) != len(segs) {
		return nil, false
	}
	vars := map[string]string{}
	for i, t := range tmpl {
		if name, ok := strings.CutPrefix(t, "{"); ok {
			vars[strings.TrimSuffix(name, "}")] = segs[i]
		} else if t != segs[i] {
			return nil, false
		}
	}
	return vars, true
}

// adminCall is one admin request: its body and its path's variables.
type adminCall struct {
	req  *http.Request
	vars map[string]string
}

// decode reads the JSON body into v.
func (a *adminCall) decode(v any) *response {
	b, err := io.ReadAll(io.LimitReader(a.req.Body, 1<<20))
	if err != nil {
		return apiError(400, "cannot read body")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return apiError(400, "invalid JSON: "+err.Error())
	}
	return nil
}

// vmid is the path's {vmid}.
func (a *adminCall) vmid() (int, *response) {
	seg := a.vars["vmid"]
	id, err := strconv.Atoi(seg)
	if err != nil {
		return 0, apiError(400, fmt.Sprintf("invalid vmid '%s'", seg))
	}
	return id, nil
}

// adminResult answers an admin operation's error as a 400, its success as {"data": null}.
func adminResult(err error) *response {
	if err != nil {
		return apiError(400, err.Error())
	}
	return okData(nil)
}

// adminRoutes are the admin API's endpoints (the table above handleAdmin).
var adminRoutes = []adminRoute{
	{"POST", "vms/{vmid}/move", (*Sim).adminMove},
	{"GET", "info", func(s *Sim, _ *adminCall) *response { return okData(s.Info()) }},
	{"GET", "stats", func(s *Sim, _ *adminCall) *response { return okData(s.Stats()) }},
	{"DELETE", "stats", func(s *Sim, _ *adminCall) *response { s.ResetStats(); return okData(nil) }},
	{"GET", "state", func(s *Sim, _ *adminCall) *response { return okData(s.State()) }},
	{"GET", "faults", func(s *Sim, _ *adminCall) *response { return okData(s.Faults()) }},
	{"POST", "faults", func(s *Sim, a *adminCall) *response {
		var f Fault
		if r := a.decode(&f); r != nil {
			return r
		}
		return okData(s.InjectFault(f))
	}},
	{"DELETE", "faults", func(s *Sim, _ *adminCall) *response { s.ClearFaults(); return okData(nil) }},
	{"DELETE", "faults/{id}", func(s *Sim, a *adminCall) *response {
		if !s.RemoveFault(a.vars["id"]) {
			return apiError(404, fmt.Sprintf("no fault '%s'", a.vars["id"]))
		}
		return okData(nil)
	}},
	{"POST", "vms", func(s *Sim, a *adminCall) *response {
		var spec VMSpec
		if r := a.decode(&spec); r != nil {
			return r
		}
		return adminResult(s.AddVM(spec))
	}},
	{"DELETE", "vms/{vmid}", func(s *Sim, a *adminCall) *response {
		id, r := a.vmid()
		if r != nil {
			return r
		}
		return adminResult(s.DeleteVM(id))
	}},
	{"POST", "vms/{vmid}/state", func(s *Sim, a *adminCall) *response {
		id, r := a.vmid()
		if r != nil {
			return r
		}
		var patch VMPatch
		if r := a.decode(&patch); r != nil {
			return r
		}
		return adminResult(s.SetVMState(id, patch))
	}},
	{"GET", "vms/{vmid}/seed", func(s *Sim, a *adminCall) *response {
		id, r := a.vmid()
		if r != nil {
			return r
		}
		sf, ok := s.GuestSeed(id)
		if !ok {
			return apiError(404, fmt.Sprintf("no seed read by VM %d", id))
		}
		return okData(sf)
	}},
	{"GET", "ha", func(s *Sim, a *adminCall) *response {
		return okData(map[string]any{"resources": s.HAResources(), "rules": s.HARules(), "log": s.HALog()})
	}},
	{"POST", "nodes/{node}/down", func(s *Sim, a *adminCall) *response { return adminResult(s.SetNodeDown(a.vars["node"], true)) }},
	{"POST", "nodes/{node}/up", func(s *Sim, a *adminCall) *response { return adminResult(s.SetNodeDown(a.vars["node"], false)) }},
	{"POST", "deny", func(s *Sim, a *adminCall) *response { return s.adminPrivilege(a, s.Deny) }},
	{"POST", "allow", func(s *Sim, a *adminCall) *response { return s.adminPrivilege(a, s.Allow) }},
}

// adminPrivilege is /pvesim/deny and /pvesim/allow: op on the body's Privilege.
func (s *Sim) adminPrivilege(a *adminCall, op func(aclPath, privilege string)) *response {
	var p Privilege
	if r := a.decode(&p); r != nil {
		return r
	}
	if p.Path == "" || p.Privilege == "" {
		return apiError(400, "path and privilege are required")
	}
	op(p.Path, p.Privilege)
	return okData(nil)
}
