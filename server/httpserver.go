package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Timeouts are the http.Server timeouts of serve and demo. Without
// them one client can pin a connection forever: an idle keep-alive
// connection, or a body sent at one byte a second.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers.
	ReadHeader Duration `json:"read_header,omitempty"`
	// Read bounds reading a whole request, body included.
	Read Duration `json:"read,omitempty"`
	// Write bounds a response, from the end of the request headers.
	// Streaming handlers lift it for their own response with
	// http.ResponseController (SetWriteDeadline/SetReadDeadline).
	Write Duration `json:"write,omitempty"`
	// Idle bounds how long a keep-alive connection waits for its next
	// request.
	Idle Duration `json:"idle,omitempty"`
}

// DefaultTimeouts are the timeouts of a server unless configured.
var DefaultTimeouts = Timeouts{
	ReadHeader: Duration(10 * time.Second),
	Read:       Duration(30 * time.Second),
	Write:      Duration(60 * time.Second),
	Idle:       Duration(120 * time.Second),
}

// fields lists the timeouts with their flag names.
func (t *Timeouts) fields() []struct {
	flag, what string
	p          *Duration
} {
	return []struct {
		flag, what string
		p          *Duration
	}{
		{"read-header-timeout", "reading a request's headers", &t.ReadHeader},
		{"read-timeout", "reading a whole request, body included", &t.Read},
		{"write-timeout", "writing a response (from the end of the request headers)", &t.Write},
		{"idle-timeout", "a keep-alive connection waiting for its next request", &t.Idle},
	}
}

// withDefaults fills unset (zero) timeouts from DefaultTimeouts.
func (t Timeouts) withDefaults() Timeouts {
	def := DefaultTimeouts.fields()
	for i, f := range t.fields() {
		if *f.p == 0 {
			*f.p = *def[i].p
		}
	}
	return t
}

// server returns an http.Server for h with these timeouts (defaults for
// the unset ones).
func (t Timeouts) server(h http.Handler) *http.Server {
	t = t.withDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: time.Duration(t.ReadHeader),
		ReadTimeout:       time.Duration(t.Read),
		WriteTimeout:      time.Duration(t.Write),
		IdleTimeout:       time.Duration(t.Idle),
	}
}

// Duration is a time.Duration written as a Go duration string ("30s") in
// JSON and on the command line.
type Duration time.Duration

// String implements flag.Value.
func (d *Duration) String() string { return time.Duration(*d).String() }

// Set implements flag.Value.
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration such as 30s or 2m: %q", s)
	}
	if v < 0 {
		return fmt.Errorf("must not be negative: %q", s)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"30s\"")
	}
	return d.Set(s)
}

// MarshalJSON writes a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
