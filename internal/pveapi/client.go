package pveapi

import (
	"time"
)

// Options configure the HTTP adapter. New never dials and never reads the token file.
type Options struct {
	// Endpoint is https://<host>:8006 (a trailing / or /api2/json is accepted).
	Endpoint string
	// Token is "<user>@<realm>!<tokenid>=<secret>". Ignored when TokenFile is set.
	Token string
	// TokenFile holds the token on one line; it is re-read on every request.
	TokenFile string
	// CAFile or CAPEM: the PEM bundle to verify the server with; neither: system roots.
	CAFile string
	CAPEM  string
	// Insecure skips TLS verification.
	Insecure bool
	// RequestTimeout bounds one request, response included. Zero: 30 s.
	RequestTimeout time.Duration
	// MaxInFlight caps concurrent requests of this client. Zero: a default.
	MaxInFlight int
	// UserAgent is sent on every request.
	UserAgent string
}

// Client is the net/http implementation of API.
type Client struct {
	opts Options
}

// The client issue adds: var _ API = (*Client)(nil)

// New returns a client. NOTE(skeleton): the client issue implements it.
func New(opts Options) (*Client, error) { panic("not implemented") }

// TokenID returns the token id (the part before '='), reading the token file when one is
// configured. Errors wrap ErrCredentials.
func (c *Client) TokenID() (string, error) { panic("not implemented") }
