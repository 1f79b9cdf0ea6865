package pveapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults and fixed budgets of the adapter (decision: http1-only).
const (
	// DefaultRequestTimeout bounds one request, response included, when Options leave it 0.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultMaxInFlight caps concurrent requests per client when Options leave it 0:
	// pveproxy runs 3 workers, each serving keep-alive connections, so a few more than 3
	// keeps the node busy without queueing deep inside it.
	DefaultMaxInFlight = 8
	// DialTimeout bounds the TCP connect, HandshakeTimeout the TLS handshake.
	DialTimeout      = 10 * time.Second
	HandshakeTimeout = 10 * time.Second
	// IdleConnTimeout is how long an idle keep-alive connection is kept.
	IdleConnTimeout = 90 * time.Second

	apiPrefix = "/api2/json"
	// DefaultPort is pveproxy's port, used when the endpoint names none.
	DefaultPort     = "8006"
	maxErrorBody    = 64 << 10
	maxResponseBody = 32 << 20
	defaultUA       = "terraform-provider-proxy"
)

// Options configure the HTTP adapter. New never dials and never reads the token file.
type Options struct {
	// Endpoint is https://<host>[:port] (a trailing / or /api2/json is accepted); without a
	// port, DefaultPort (8006, where pveproxy listens) is used.
	Endpoint string
	// Token is "<user>@<realm>!<tokenid>=<secret>". Ignored when TokenFile is set.
	Token string
	// TokenFile holds the token on one line; it is re-read on every request. A file that is
	// missing or unreadable is a Permanent ErrCredentials.
	TokenFile string
	// CAFile or CAPEM: the PEM bundle to verify the server with; neither: system roots.
	// CAFile is read on the first request and cached; a missing or unreadable file is a
	// Permanent ErrCA.
	CAFile string
	CAPEM  string
	// Insecure skips TLS verification.
	Insecure bool
	// RequestTimeout bounds one request, response included. Zero: 30 s.
	RequestTimeout time.Duration
	// MaxInFlight caps concurrent requests of this client. Zero: DefaultMaxInFlight.
	MaxInFlight int
	// UserAgent is sent on every request. Empty: "terraform-provider-proxy".
	UserAgent string
}

// Client is the net/http implementation of API. It is safe for concurrent use; one Client
// should serve a whole provider instance so that its keep-alive pool and its MaxInFlight
// bound are shared.
type Client struct {
	opts    Options
	base    string // https://host:port/api2/json
	sem     chan struct{}
	caPool  *x509.CertPool // from CAPEM, parsed by New
	mu      sync.Mutex
	hc      *http.Client // built on first use, once the CA is loaded
	timeout time.Duration
}

var _ API = (*Client)(nil)

// New validates opts and returns a client. It never dials and never reads TokenFile or
// CAFile; an inline Token and CAPEM are checked here. Errors are Permanent.
func New(opts Options) (*Client, error) {
	base, err := baseURL(opts.Endpoint)
	if err != nil {
		return nil, WithClass(Permanent, err)
	}
	if opts.TokenFile == "" {
		if opts.Token == "" {
			return nil, WithClass(Permanent, fmt.Errorf("%w: neither an API token nor a token file is configured", ErrCredentials))
		}
		if _, err := parseToken(strings.TrimSpace(opts.Token), "the API token"); err != nil {
			return nil, err
		}
	}
	if opts.CAFile != "" && opts.CAPEM != "" {
		return nil, WithClass(Permanent, errors.New("proxmox client: set either a CA file or an inline CA PEM, not both"))
	}
	if opts.Insecure && (opts.CAFile != "" || opts.CAPEM != "") {
		return nil, WithClass(Permanent, errors.New("proxmox client: insecure skips verification, so a CA must not be set with it"))
	}
	if opts.RequestTimeout < 0 {
		return nil, WithClass(Permanent, errors.New("proxmox client: request timeout must not be negative"))
	}
	if opts.MaxInFlight < 0 {
		return nil, WithClass(Permanent, errors.New("proxmox client: max in flight must not be negative"))
	}
	c := &Client{opts: opts, base: base, timeout: opts.RequestTimeout}
	if c.timeout == 0 {
		c.timeout = DefaultRequestTimeout
	}
	n := opts.MaxInFlight
	if n == 0 {
		n = DefaultMaxInFlight
	}
	c.sem = make(chan struct{}, n)
	if opts.CAPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(opts.CAPEM)) {
			return nil, WithClass(Permanent, fmt.Errorf("%w: the inline CA PEM holds no certificate", ErrCA))
		}
		c.caPool = pool
	}
	return c, nil
}

// baseURL accepts https://host[:port][/][/api2/json[/]] and returns https://host:port/api2/json,
// with port 8006 when none is given (a Proxmox VE endpoint is never on 443 unless a reverse
// proxy says so, and then its port is written out).
func baseURL(endpoint string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil || endpoint == "" {
		return "", fmt.Errorf("proxmox client: endpoint %q is not a URL", endpoint)
	}
	if u.Scheme != "https" || u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("proxmox client: endpoint %q must be https://<host>[:port]", u.Redacted())
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("proxmox client: endpoint %q must not carry credentials, a query or a fragment", u.Redacted())
	}
	switch strings.TrimSuffix(u.Path, "/") {
	case "", apiPrefix:
	default:
		return "", fmt.Errorf("proxmox client: endpoint %q must have no path other than %s", u.Redacted(), apiPrefix)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), DefaultPort)
	}
	return "https://" + host + apiPrefix, nil
}

var tokenRE = regexp.MustCompile(`^([^\s@!=:]+@[A-Za-z][A-Za-z0-9._-]*![A-Za-z][A-Za-z0-9._-]*)=(\S+)$`)

// apiToken is a parsed "<user>@<realm>!<tokenid>=<secret>".
type apiToken struct {
	full   string
	id     string
	secret string
}

// parseToken never puts the token's text in an error.
func parseToken(s, what string) (apiToken, error) {
	m := tokenRE.FindStringSubmatch(s)
	if m == nil {
		return apiToken{}, WithClass(Permanent, fmt.Errorf("%w: %s is not <user>@<realm>!<tokenid>=<secret>", ErrCredentials, what))
	}
	return apiToken{full: s, id: m[1], secret: m[2]}, nil
}

// token returns the token to send: read from TokenFile on every call when one is set.
func (c *Client) token() (apiToken, error) {
	if c.opts.TokenFile == "" {
		return parseToken(strings.TrimSpace(c.opts.Token), "the API token")
	}
	raw, err := os.ReadFile(c.opts.TokenFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return apiToken{}, WithClass(Permanent, fmt.Errorf("%w: token file %s does not exist: %w", ErrCredentials,
				c.opts.TokenFile, fs.ErrNotExist))
		}
		return apiToken{}, WithClass(Permanent, fmt.Errorf("%w: reading token file: %w", ErrCredentials, err))
	}
	return parseToken(strings.TrimSpace(string(raw)), "token file "+c.opts.TokenFile)
}

// TokenID returns the token id (the part before '=', "<user>@<realm>!<tokenid>"), reading
// the token file when one is configured. Errors wrap ErrCredentials. The secret is never
// returned.
func (c *Client) TokenID() (string, error) {
	t, err := c.token()
	if err != nil {
		return "", err
	}
	return t.id, nil
}

// httpClient builds the http.Client on first use, once the CA is available. A missing or
// unreadable CA file, or one with no certificate, is Permanent. The client is cached only
// once built: a transport's roots cannot change later.
func (c *Client) httpClient() (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hc != nil {
		return c.hc, nil
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	switch {
	case c.opts.Insecure:
		tlsCfg.InsecureSkipVerify = true //nolint:gosec // the admin asked for it; the provider warns.
	case c.caPool != nil:
		tlsCfg.RootCAs = c.caPool
	case c.opts.CAFile != "":
		pem, err := os.ReadFile(c.opts.CAFile)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, WithClass(Permanent, fmt.Errorf("%w: CA file %s does not exist: %w", ErrCA, c.opts.CAFile, fs.ErrNotExist))
			}
			return nil, WithClass(Permanent, fmt.Errorf("%w: reading CA file: %w", ErrCA, err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, WithClass(Permanent, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrCA, c.opts.CAFile))
		}
		tlsCfg.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}
	n := cap(c.sem)
	tr := &http.Transport{
		Proxy:       http.ProxyFromEnvironment,
		DialContext: dialer.DialContext,
		// Our own TLS dial, so that a handshake failing for a network reason can be told
		// from a verification failure (IsDialFailure), with its own 10 s budget.
		DialTLSContext:      tlsDialer(dialer, tlsCfg),
		TLSClientConfig:     tlsCfg, // used when a proxy is in between
		TLSHandshakeTimeout: HandshakeTimeout,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConns:        2 * n,
		MaxIdleConnsPerHost: n,
		IdleConnTimeout:     IdleConnTimeout,
	}
	c.hc = &http.Client{
		Transport: tr,
		Timeout:   c.timeout,
		// Never follow a redirect: it would carry the token somewhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c.hc, nil
}

func tlsDialer(d *net.Dialer, base *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cfg := base.Clone()
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			cfg.ServerName = host
		}
		hctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
		defer cancel()
		conn := tls.Client(raw, cfg)
		if err := conn.HandshakeContext(hctx); err != nil {
			_ = raw.Close()
			var alert tls.AlertError
			var rec tls.RecordHeaderError
			if IsTLSVerification(err) || ctx.Err() != nil || errors.As(err, &alert) || errors.As(err, &rec) {
				return nil, err
			}
			return nil, &handshakeError{err: err}
		}
		return conn, nil
	}
}

// request is one seam call.
type request struct {
	call   string // seam method name, logged
	method string
	path   string // below /api2/json, segments already escaped
	query  url.Values
	form   url.Values
	// upload body (multipart); form must be nil.
	body        func() io.Reader
	contentType string
	length      int64
	fields      map[string]any // node, vmid, storage... for the log line
}

// do runs one request: bounded by MaxInFlight, with the token read now, the reply decoded
// into out (the body's "data"), and one log line.
func (c *Client) do(ctx context.Context, r request, out any) (err error) {
	ctx = logContext(ctx)
	start := time.Now()
	status := 0
	defer func() { logCall(ctx, r, status, time.Since(start), err) }()

	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("proxmox API %s %s: waiting for a request slot: %w", r.method, r.path, ctx.Err())
	}
	defer func() { <-c.sem }()

	tok, err := c.token()
	if err != nil {
		return err
	}
	ctx = maskToken(ctx, tok)
	hc, err := c.httpClient()
	if err != nil {
		return err
	}
	logParams(ctx, r)
	resp, err := c.send(ctx, hc, r, tok)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	status = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readAPIError(resp, tok)
	}
	var env map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBody)).Decode(&env); err != nil {
		if answerNotJSON(err) {
			return notProxmox(r, resp, "")
		}
		// The body was cut short (the connection dropped, the request timed out): retry.
		return fmt.Errorf("proxmox API %s %s: reading the response: %w", r.method, r.path, err)
	}
	// Drain what is left so the connection goes back to the pool.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	data, ok := env["data"]
	switch {
	case !isJSONContentType(resp.Header.Get("Content-Type")):
		return notProxmox(r, resp, "")
	case !ok:
		return notProxmox(r, resp, ` without a "data" member`)
	}
	if out == nil {
		return nil
	}
	if err := decodeData(data, out); err != nil {
		return fmt.Errorf("proxmox API %s %s: decoding data: %w", r.method, r.path, err)
	}
	return nil
}

// ErrNotProxmox marks a 2xx answer that is not Proxmox VE's JSON envelope (a web server,
// a login page or a proxy at the endpoint): Permanent, since the answer will not change.
// Test with errors.Is.
var ErrNotProxmox = errors.New("the endpoint does not answer like a Proxmox VE API")

// notProxmox is the Permanent error of a 2xx answer that is not {"data": ...} in JSON. It
// names the request and the answer's media type, never a header value or the body.
func notProxmox(r request, resp *http.Response, detail string) error {
	got := "no content type"
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil && mt != "" {
		got = mt
	} else if resp.Header.Get("Content-Type") != "" {
		got = "an invalid content type"
	}
	return WithClass(Permanent, fmt.Errorf("%w (%s %s: got %s%s); check the provider's endpoint",
		ErrNotProxmox, r.method, r.path, got, detail))
}

// answerNotJSON reports whether a decoding error says that a complete body is not a JSON
// object (HTML, text, an array, nothing at all), as opposed to a body cut short.
func answerNotJSON(err error) bool {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &te) || err == io.EOF //nolint:errorlint // Decode returns io.EOF itself for an empty body
}

// isJSONContentType reports whether a Content-Type is application/json (Proxmox sends
// "application/json;charset=UTF-8").
func isJSONContentType(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && mt == "application/json"
}

func (c *Client) newRequest(ctx context.Context, r request, tok apiToken) (*http.Request, error) {
	target := c.base + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var body io.Reader
	var length int64
	contentType := ""
	switch {
	case r.body != nil:
		body, length, contentType = r.body(), r.length, r.contentType
	case r.method == http.MethodPost || r.method == http.MethodPut:
		enc := r.form.Encode()
		body, length, contentType = strings.NewReader(enc), int64(len(enc)), "application/x-www-form-urlencoded"
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, WithClass(Permanent, fmt.Errorf("proxmox API %s %s: building request: %w", r.method, r.path, err))
	}
	if body != nil {
		req.ContentLength = length
		req.Header.Set("Content-Type", contentType)
		if length == 0 {
			req.Body = http.NoBody
		}
	}
	req.Header.Set("Authorization", "PVEAPIToken="+tok.full)
	req.Header.Set("Accept", "application/json")
	ua := c.opts.UserAgent
	if ua == "" {
		ua = defaultUA
	}
	req.Header.Set("User-Agent", ua)
	return req, nil
}

// DialRetryDelays are the pauses between the attempts of a request whose connection could
// not be made (see send). Tests shorten them.
var DialRetryDelays = []time.Duration{250 * time.Millisecond, 750 * time.Millisecond, 2 * time.Second}

// dialRetryWindow is the time after which send makes no new attempt: a connect that hangs
// until DialTimeout is not repeated for long.
const dialRetryWindow = 12 * time.Second

// send sends r. A request whose connection could not be made (IsDialFailure: refused, not
// resolved, connect or TLS handshake timed out) never reached Proxmox, so it is sent again
// whatever its method, after each of DialRetryDelays while dialRetryWindow has not passed
// and ctx lasts. When every attempt fails the error is a Permanent *UnreachableError naming
// the address: the endpoint does not answer, and waiting longer inside the operation would
// only hide that. Any other transport failure is returned at once.
func (c *Client) send(ctx context.Context, hc *http.Client, r request, tok apiToken) (*http.Response, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		req, err := c.newRequest(ctx, r, tok)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err == nil {
			return resp, nil
		}
		terr := transportError(r, err)
		if !IsDialFailure(terr) || ctx.Err() != nil {
			return nil, terr
		}
		if attempt > len(DialRetryDelays) || time.Since(start) > dialRetryWindow {
			return nil, WithClass(Permanent, fmt.Errorf("proxmox API %s %s: %w", r.method, r.path, &UnreachableError{
				Address: c.address(), Attempts: attempt, Elapsed: time.Since(start), Err: unwrapTransport(err),
			}))
		}
		logRetry(ctx, r, attempt, terr)
		t := time.NewTimer(DialRetryDelays[attempt-1])
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, terr
		case <-t.C:
		}
	}
}

// address is the endpoint's https://host:port.
func (c *Client) address() string { return strings.TrimSuffix(c.base, apiPrefix) }

// Address returns the endpoint's https://host:port, the port filled in when the
// configuration left it out.
func (c *Client) Address() string { return c.address() }

func unwrapTransport(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// transportError drops url.Error's URL (it names the host, which the caller knows) and keeps
// the cause for classification: "proxmox API GET /version: dial tcp ...: connection refused".
func transportError(r request, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("proxmox API %s %s: %w", r.method, r.path, err)
}

// readAPIError builds the APIError of a non-2xx answer (fact: error-envelope), redacting the token.
func readAPIError(resp *http.Response, tok apiToken) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	reason := strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)))
	e := &APIError{Status: resp.StatusCode}
	var body struct {
		Message string            `json:"message"`
		Errors  map[string]string `json:"errors"`
	}
	if len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &body) == nil {
		e.Message = strings.TrimRight(body.Message, "\r\n")
		if len(body.Errors) > 0 {
			e.Errors = make(map[string]string, len(body.Errors))
			for k, v := range body.Errors {
				e.Errors[redact(k, tok)] = redact(strings.TrimRight(v, "\r\n"), tok)
			}
		}
	}
	if e.Message == "" {
		e.Message = reason
	}
	e.Message = redact(e.Message, tok)
	return e
}

const redacted = "[redacted]"

// redact removes the token, its secret and any Authorization value from s.
func redact(s string, tok apiToken) string {
	for _, secret := range []string{tok.full, tok.secret} {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, redacted)
		}
	}
	return reAuthValue.ReplaceAllString(s, "PVEAPIToken="+redacted)
}

var reAuthValue = regexp.MustCompile(`(?i)PVEAPIToken[=:\s]+\S+`)

// decodeData decodes a response's data into out. A *map[string]string gets decodeConfig's
// scalar rules.
func decodeData(data json.RawMessage, out any) error {
	if m, ok := out.(*map[string]string); ok {
		cfg, err := decodeConfig(data)
		if err != nil {
			return err
		}
		*m = cfg
		return nil
	}
	return json.Unmarshal(data, out)
}

// seg escapes one path segment: "/" becomes %2F, ":" "@" "!" stay (url.PathEscape).
func seg(s string) string { return url.PathEscape(s) }
