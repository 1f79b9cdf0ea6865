package pvesim

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The request pipeline: stats, body-on-GET check, token auth, routing (501), faults, the
// method's declared permission check (403), node checks (hostname lookup 500, unreachable
// node 595), parameters (400), the checks the method's code makes before it acts (403),
// then the handler under the state mutex. pve-manager PVE/HTTPServer.pm rest_handler runs
// check_api2_permissions before it proxies to the node and before the handler validates
// the parameters (pve-common src/PVE/RESTHandler.pm handle).

type call struct {
	req    *http.Request
	method string
	rel    string // path after /api2/json, as requested
	route  *route
	vars   map[string]string
	params map[string]string
	upload *uploadFile
	now    time.Time
	// taskFault, when set, shapes the task this call creates.
	taskFault *Fault
	vmid      int
	node      string
	sim       *Sim // for privilege checks that read the state (called with mu held)
	// authid is the authenticated token, "<user>@<realm>!<tokenid>".
	authid string
}

type handlerFunc func(s *Sim, c *call) *response

type route struct {
	method string
	tmpl   string
	segs   []string
	schema *schema
	// perms is the method's declared permission check (its permissions => { check => ...
	// }), run before the parameters are validated; nil: any authenticated caller
	// (user => 'all'). code holds the checks the method's code makes before it acts, run
	// after the validation. Both run with mu held and answer a *permError (403) or any
	// other error (500).
	perms func(c *call) error
	code  func(c *call) error
	h     handlerFunc
}

// retryResponse asks the pipeline to run the handler again after d (a config lock held
// by a task); the pipeline gives up after LockWait with "can't lock file".
type retryResponse struct{ after time.Duration }

func (s *Sim) handle(req *http.Request) *response {
	method := req.Method
	p := req.URL.EscapedPath()
	if p == "/pvesim" || strings.HasPrefix(p, "/pvesim/") {
		return s.handleAdminRequest(req, p)
	}
	defer s.conc.enter()()
	rel, ok := strings.CutPrefix(p, "/api2/json")
	if !ok || (rel != "" && rel[0] != '/') {
		return notImplemented(method, req.URL.Path)
	}
	if rel == "" {
		rel = "/"
	}
	rt, vars := s.routeOf(method, rel)
	if (method == http.MethodGet || method == http.MethodHead || method == http.MethodDelete) &&
		(req.ContentLength > 0 || len(req.TransferEncoding) > 0) {
		return apiError(501, fmt.Sprintf("Unexpected content for method '%s'", method))
	}
	authid, r := s.authenticate(req)
	if r != nil {
		return r
	}
	unescaped, _ := url.PathUnescape(rel)
	if rt == nil {
		return notImplemented(method, unescaped)
	}
	c := &call{req: req, method: method, rel: unescaped, route: rt, vars: vars, now: time.Now(), sim: s, authid: authid}
	fr, r := s.faultsFor(c)
	if r != nil {
		return r
	}
	// Parameters are read before the permission check, which fills its path templates from
	// them (pve-common src/PVE/Tools.pm template_replace); they are validated after it.
	params, r := readParams(c)
	if r != nil {
		return r
	}
	c.params = params
	if v, ok := vars["vmid"]; ok {
		c.vmid, _ = strconv.Atoi(v)
	}
	for _, stage := range []func(*call) *response{s.checkPerms, s.checkNode, validateCall, s.checkCode} {
		if r := stage(c); r != nil {
			return r
		}
	}
	return s.runHandler(c, fr)
}

// handleAdminRequest is a request under /pvesim: the admin API, for the simulator's own
// token alone.
func (s *Sim) handleAdminRequest(req *http.Request, p string) *response {
	authid, r := s.authenticate(req)
	if r != nil {
		return r
	}
	if authid != s.TokenID() {
		// The admin API is the test's, not the cluster's: only the simulator's own token.
		return apiError(403, "Permission check failed")
	}
	return s.handleAdmin(req, strings.TrimPrefix(p, "/pvesim"))
}

// routeOf is the route of method on rel and its path variables (nil for none), counted in
// the stats under its template ("<method> (unmatched)" for none).
func (s *Sim) routeOf(method, rel string) (*route, map[string]string) {
	segs, ok := splitPath(rel)
	var rt *route
	var vars map[string]string
	if ok {
		rt, vars = matchRoute(method, segs)
	}
	key := method + " (unmatched)"
	if rt != nil {
		key = method + " " + rt.tmpl
	}
	s.mu.Lock()
	s.stats[key]++
	s.mu.Unlock()
	return rt, vars
}

// faultsFor consumes the faults matching c: their latency is slept, a fault's response
// answers the call, and a task fault shapes the task the call creates.
func (s *Sim) faultsFor(c *call) (faultResult, *response) {
	s.mu.Lock()
	fr := s.matchFaults(c)
	s.mu.Unlock()
	if fr.latency > 0 {
		time.Sleep(fr.latency)
	}
	if fr.resp != nil {
		return fr, fr.resp
	}
	c.taskFault = fr.task
	return fr, nil
}

// checkPerms is the route's declared permission check.
func (s *Sim) checkPerms(c *call) *response {
	if c.route.perms == nil {
		return nil
	}
	s.mu.Lock()
	err := c.route.perms(c)
	s.mu.Unlock()
	if err == nil {
		return nil
	}
	var pe *permError
	if errors.As(err, &pe) && c.route.tmpl == uploadTmpl {
		// pveproxy checks an upload's privilege in its auth handler (pve-manager
		// PVE/HTTPServer.pm auth_handler, lines 115-121), whose failures are a bare
		// reason phrase, delayed 3 s (pve-http-server src/PVE/APIServer/AnyEvent.pm,
		// the auth_handler error branch).
		time.Sleep(s.real(3 * time.Second))
		return &response{status: 403, reason: pe.Error()}
	}
	return errResponse(err)
}

// checkNode is the node of the path: its format, existence, reachability (pveproxy
// forwards to the node).
func (s *Sim) checkNode(c *call) *response {
	n, ok := c.vars["node"]
	if !ok {
		return nil
	}
	if e := pNode.check(n); e != "" {
		return paramError(map[string]string{"node": e})
	}
	s.mu.Lock()
	_, exists := s.nodes[n]
	down := exists && s.nodeDown(n)
	s.mu.Unlock()
	if !exists {
		return apiError(500, fmt.Sprintf("hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", n, n))
	}
	if down {
		return &response{status: 595, reason: "No route to host"}
	}
	c.node = n
	return nil
}

// validateCall is the parameters' validation: the path variables other than node, then
// the route's schema.
func validateCall(c *call) *response {
	errs := map[string]string{}
	for name, v := range c.vars {
		if sp, ok := pathSpecs[name]; ok && name != "node" {
			if e := sp.check(v); e != "" {
				errs[name] = e
			}
		}
	}
	for k, e := range c.route.schema.validate(c.params) {
		errs[k] = e
	}
	if len(errs) > 0 {
		return paramError(errs)
	}
	return nil
}

// checkCode is the checks the method's code makes before it acts.
func (s *Sim) checkCode(c *call) *response {
	if c.route.code == nil {
		return nil
	}
	s.mu.Lock()
	s.advance(time.Now())
	err := c.route.code(c)
	s.mu.Unlock()
	if err != nil {
		return errResponse(err)
	}
	return nil
}

// runHandler runs the route's handler under the state mutex, again while it asks for a
// retry (a config lock held by a task), until LockWait: then "can't lock file".
func (s *Sim) runHandler(c *call, fr faultResult) *response {
	deadline := time.Now().Add(s.real(s.dur.LockWait))
	for {
		s.mu.Lock()
		c.now = time.Now()
		s.advance(c.now)
		if fr.lock != "" {
			s.applyFaultLock(c, fr)
			fr.lock = ""
		}
		resp := c.route.h(s, c)
		s.mu.Unlock()
		if resp.retry == nil {
			return resp
		}
		left := time.Until(deadline)
		if left <= 0 {
			return apiError(500, flockTimeoutMsg(c.vmid))
		}
		time.Sleep(min(resp.retry.after, left, 50*time.Millisecond))
	}
}

func splitPath(rel string) ([]string, bool) {
	rel = strings.TrimSuffix(strings.TrimPrefix(rel, "/"), "/")
	if rel == "" {
		return nil, true
	}
	raw := strings.Split(rel, "/")
	out := make([]string, len(raw))
	for i, r := range raw {
		u, err := url.PathUnescape(r)
		if err != nil || u == "" {
			return nil, false
		}
		out[i] = u
	}
	return out, true
}

func matchRoute(method string, path []string) (*route, map[string]string) {
	for _, rt := range routes {
		if rt.method != method {
			continue
		}
		segs := path
		// A volume id may hold a '/': the storage content handlers match the whole rest
		// of the path (pve-storage src/PVE/API2/Storage/Status.pm registers the Content
		// subclass with fragmentDelimiter '').
		if n := len(rt.segs); rt.segs[n-1] == "{volume}" && len(segs) > n {
			segs = append(slices.Clone(segs[:n-1]), strings.Join(segs[n-1:], "/"))
		}
		if len(rt.segs) != len(segs) {
			continue
		}
		vars := map[string]string{}
		ok := true
		for i, t := range rt.segs {
			if strings.HasPrefix(t, "{") {
				vars[t[1:len(t)-1]] = segs[i]
			} else if t != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return rt, vars
		}
	}
	return nil, nil
}

var pathSpecs = map[string]pspec{
	"node": pNode, "vmid": pVMID, "storage": pStorage,
	"upid": {maxLen: 256}, "volume": {},
}

// authenticate checks the PVEAPIToken header (fact: auth-401-texts): none gives 401 No ticket, a wrong
// secret or unknown token 401 Authentication failed!. A 401 has an empty body (fact: error-envelope).
// The token must exist, its user be enabled and neither be expired (pve-access-control
// src/PVE/AccessControl.pm verify_token); it answers the token id.
func (s *Sim) authenticate(req *http.Request) (string, *response) {
	h := req.Header.Get("Authorization")
	v, ok := strings.CutPrefix(h, "PVEAPIToken=")
	if !ok {
		v, ok = strings.CutPrefix(h, "PVEAPIToken ")
	}
	if !ok {
		return "", &response{status: 401, reason: "No ticket"}
	}
	failed := &response{status: 401, reason: "Authentication failed!"}
	i := strings.LastIndexAny(v, "=:")
	if i <= 0 {
		return "", failed
	}
	id, secret := v[:i], v[i+1:]
	user, sub, ok := splitTokenID(id)
	if !ok {
		return "", failed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.access.users[user]
	var tok *simToken
	if u != nil {
		tok = u.tokens[sub]
	}
	want := "\x00" // compared anyway, so that an unknown token takes as long as a wrong secret
	if tok != nil {
		want = tok.secret
	}
	match := subtle.ConstantTimeCompare([]byte(secret), []byte(want)) == 1
	now := time.Now().Unix()
	if tok == nil || !match || !u.enable || (u.expire != 0 && u.expire < now) || (tok.expire != 0 && tok.expire < now) {
		return "", failed
	}
	return id, nil
}

// errResponse answers a failed check: a *permError is a 403, a *response is itself, any
// other error a 500 with its text.
func errResponse(err error) *response {
	var pe *permError
	var re *respError
	switch {
	case errors.As(err, &pe):
		return pe.response()
	case errors.As(err, &re):
		return re.r
	}
	return apiError(500, err.Error())
}

// respError carries a ready answer (a 400) out of a check.
type respError struct{ r *response }

func (e *respError) Error() string { return e.r.reason }

// Responses.

func okData(data any) *response {
	b, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return apiError(500, "pvesim: cannot encode response: "+err.Error())
	}
	return &response{status: 200, reason: "OK", body: b}
}

func apiError(status int, msg string) *response {
	b, _ := json.Marshal(map[string]any{"data": nil, "message": msg + "\n"})
	return &response{status: status, reason: msg, body: b}
}

func paramError(errs map[string]string) *response {
	b, _ := json.Marshal(map[string]any{"data": nil, "errors": errs, "message": paramFailed + "\n"})
	return &response{status: 400, reason: paramFailed, body: b}
}

// notImplemented is pve-manager PVE/HTTPServer.pm rest_handler's default answer (line
// 150): a message set directly, so without the newline a die'd error carries.
func notImplemented(method, path string) *response {
	msg := fmt.Sprintf("Method '%s %s' not implemented", method, path)
	b, _ := json.Marshal(map[string]any{"data": nil, "message": msg})
	return &response{status: 501, reason: msg, body: b}
}

func retryAfter(d time.Duration) *response {
	if d <= 0 {
		d = time.Millisecond
	}
	return &response{retry: &retryResponse{after: d}}
}

// Parameters.

const maxFormBody = 64 << 10

// readParams reads a call's parameters: the query, then for POST and PUT the body (an
// upload's multipart form, JSON, or a urlencoded form); the path's variables are not
// parameters.
func readParams(c *call) (map[string]string, *response) {
	params := map[string]string{}
	q, _ := url.ParseQuery(c.req.URL.RawQuery)
	for k, v := range q {
		if len(v) > 0 {
			params[k] = v[0]
		}
	}
	if c.method == http.MethodPost || c.method == http.MethodPut {
		if r := readBodyParams(c, params); r != nil {
			return nil, r
		}
	}
	for k := range c.vars {
		delete(params, k)
	}
	return params, nil
}

// readBodyParams adds the parameters of a POST or PUT body to params, by its content type.
func readBodyParams(c *call, params map[string]string) *response {
	ct, ctParams, _ := mime.ParseMediaType(c.req.Header.Get("Content-Type"))
	switch {
	case ct == "multipart/form-data" && c.route.tmpl == uploadTmpl:
		up, fields, r := readMultipart(c.req, ctParams["boundary"])
		if r != nil {
			return r
		}
		for k, v := range fields {
			params[k] = v
		}
		c.upload = up
		if up != nil {
			params["filename"] = up.name
		}
		return nil
	case ct == "application/json":
		body, r := readFormBody(c)
		if r != nil {
			return r
		}
		return jsonParams(body, params)
	}
	body, r := readFormBody(c)
	if r != nil {
		return r
	}
	f, _ := url.ParseQuery(string(body))
	for k, v := range f {
		if len(v) > 0 {
			params[k] = v[0]
		}
	}
	return nil
}

// readFormBody reads a body of at most maxFormBody bytes (413 beyond).
func readFormBody(c *call) ([]byte, *response) {
	body, err := io.ReadAll(io.LimitReader(c.req.Body, maxFormBody+1))
	if err != nil {
		return nil, apiError(400, "Bad Request")
	}
	if len(body) > maxFormBody {
		return nil, apiError(413, "Request Entity Too Large")
	}
	return body, nil
}

// jsonParams adds a JSON object body's members to params: strings and numbers as sent,
// booleans as 1 or 0, other values as their JSON, null as absent.
func jsonParams(body []byte, params map[string]string) *response {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return apiError(400, "invalid JSON parameters")
	}
	for k, v := range m {
		switch x := v.(type) {
		case nil:
		case string:
			params[k] = x
		case json.Number:
			params[k] = x.String()
		case bool:
			params[k] = map[bool]string{true: "1", false: "0"}[x]
		default:
			b, _ := json.Marshal(x)
			params[k] = string(b)
		}
	}
	return nil
}
