package proxy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Request is a Kubernetes API request as a class of requests judges it:
// the parts of its path, and whether it is a watch.
type Request struct {
	Method                                string
	Group, Version, Resource, Subresource string
	Namespace, Name                       string
	Watch                                 bool
	Query                                 url.Values
}

// ParseRequest splits an API path: /api/v1/... (the core group) or
// /apis/<group>/<version>/..., then namespaces/<ns>/, the resource, its
// name and subresource. Other paths (discovery, /healthz) have no
// resource.
func ParseRequest(r *http.Request) Request {
	q := r.URL.Query()
	out := Request{Method: r.Method, Query: q, Watch: q.Get("watch") == "true" || q.Get("watch") == "1"}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		out.Version, parts = parts[1], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		out.Group, out.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return out
	}
	if len(parts) >= 1 && parts[0] == "watch" { // the old /watch/ paths
		out.Watch, parts = true, parts[1:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		out.Namespace, parts = parts[1], parts[2:]
	}
	if len(parts) >= 1 {
		out.Resource = parts[0]
	}
	if len(parts) >= 2 {
		out.Name = parts[1]
	}
	if len(parts) >= 3 {
		out.Subresource = parts[2]
	}
	return out
}

// IsWrite tells requests that change something.
func (r Request) IsWrite() bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// Class is a class of requests.
type Class func(Request) bool

// Watches are the watches of a resource (of every namespace).
func Watches(group, resource string) Class {
	return func(r Request) bool { return r.Watch && r.Group == group && r.Resource == resource }
}

// Writes are the writes (POST, PUT, PATCH, DELETE) of a resource's
// objects, their subresources included.
func Writes(group, resource string) Class {
	return func(r Request) bool { return r.IsWrite() && r.Group == group && r.Resource == resource }
}

// AnyOf is the union of classes.
func AnyOf(classes ...Class) Class {
	return func(r Request) bool {
		for _, c := range classes {
			if c(r) {
				return true
			}
		}
		return false
	}
}

// L7 is an HTTP reverse proxy in front of the API server for one client:
// it terminates TLS with a CA of its own (CA, for the client's
// kubeconfig), speaks HTTP/2 to the client as the API server does, and
// forwards every request upstream with the credentials of its transport,
// not the client's. On command it stalls the responses of one class of
// requests (the streams stay open and silent, everything else goes on)
// and holds the requests of another class, to deliver them upstream
// later, in the order they came, whether or not their client still
// waits.
type L7 struct {
	upstream *url.URL
	rt       http.RoundTripper
	rp       *httputil.ReverseProxy
	srv      *http.Server
	addr     string
	ca       []byte

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the handlers and the pumps

	mu sync.Mutex
	// stall is the class whose responses are withheld (nil: none), and
	// changed is closed and replaced whenever it changes.
	stall   Class
	changed chan struct{}
	bodies  map[*pumped]struct{}
	// hold is the class of requests held (nil: none), queue the held ones.
	hold  Class
	queue []*held
	// served counts the requests by protocol major version.
	served map[int]int
}

// StartL7 listens on 127.0.0.1 at a free port and forwards to upstream
// (scheme://host:port) through rt.
func StartL7(upstream *url.URL, rt http.RoundTripper) (*L7, error) {
	ca, cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the proxy to %s: %w", upstream, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &L7{upstream: upstream, rt: rt, addr: ln.Addr().String(), ca: ca, ctx: ctx, cancel: cancel,
		changed: make(chan struct{}), bodies: map[*pumped]struct{}{}, served: map[int]int{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Host = upstream.Host
			pr.Out.Header.Del("Authorization") // the transport's credentials, not the client's
		},
		Transport:      rt,
		FlushInterval:  -1,
		ModifyResponse: p.gate,
		ErrorLog:       quietLog(),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		ReadHeaderTimeout: time.Minute, ErrorLog: quietLog()}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.srv.ServeTLS(ln, "", "")
	}()
	return p, nil
}

// Addr is the address clients connect to (https).
func (p *L7) Addr() string { return p.addr }

// CA is the PEM of the CA that signed the proxy's certificate (for
// 127.0.0.1 and localhost).
func (p *L7) CA() []byte { return p.ca }

// Served counts the requests served so far, by HTTP's major version (1
// or 2): whether the client multiplexed its requests over HTTP/2.
func (p *L7) Served() map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.served)
}

// Stall withholds, from now on, the responses of the class: of the
// requests in flight and of new ones. Their headers went or go to the
// client; their bodies stay where they are (streams open, silent) until
// Unstall. One class at a time: a new one replaces the old.
func (p *L7) Stall(c Class) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stall = c
	close(p.changed)
	p.changed = make(chan struct{})
}

// StallFigures are what a stall withheld: the responses of the class open
// at its heal that had bytes waiting, and those bytes.
type StallFigures struct {
	Streams int
	Bytes   int
}

// Unstall lets the withheld responses go on, in order.
func (p *L7) Unstall() StallFigures {
	p.mu.Lock()
	defer p.mu.Unlock()
	var f StallFigures
	if p.stall != nil {
		for b := range p.bodies {
			if n := b.pending(); n > 0 && p.stall(b.req) {
				f.Streams++
				f.Bytes += n
			}
		}
	}
	p.stall = nil
	close(p.changed)
	p.changed = make(chan struct{})
	return f
}

// stalled tells whether the request's response is withheld now, and
// gives the channel that is closed when that may change.
func (p *L7) stalled(r Request) (bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stall != nil && p.stall(r), p.changed
}

// Hold holds, from now on, every request of the class: the proxy reads
// it whole and sends it upstream only at Deliver.
func (p *L7) Hold(c Class) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = c
}

// Delivery is what became of a held request.
type Delivery struct {
	Method, Path string
	// Held and Delivered are when it came and when it went upstream.
	Held, Delivered time.Time
	// Status is the upstream's answer (0: none, see Err); Gone says the
	// client had given up meanwhile.
	Status int
	Err    string
	Gone   bool
	// Body is the request's body, and Response the upstream's answer.
	Body, Response []byte
}

// Deliver stops holding and sends the held requests upstream one after
// the other, in the order they came, each once the one before was
// answered; it returns what became of them. A client that still waits
// gets its answer.
func (p *L7) Deliver() []Delivery {
	p.mu.Lock()
	queue := p.queue
	p.hold, p.queue = nil, nil
	p.mu.Unlock()
	out := make([]Delivery, 0, len(queue))
	for _, h := range queue {
		out = append(out, p.deliver(h))
	}
	return out
}

// Close stops the proxy: its listener, its connections, the held
// requests (not delivered), and waits for its goroutines.
func (p *L7) Close() error {
	p.cancel()
	err := p.srv.Close()
	p.wg.Wait()
	return err
}

// ServeHTTP forwards a request, or holds it.
func (p *L7) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.wg.Add(1)
	defer p.wg.Done()
	req := ParseRequest(r)
	p.mu.Lock()
	hold := p.hold != nil && p.hold(req)
	p.served[r.ProtoMajor]++
	p.mu.Unlock()
	if hold {
		p.held(w, r, req)
		return
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, req)))
}

type requestKey struct{}

// gate wraps a response's body so that it flows only while its request's
// class is not stalled. The body is read upstream all along (into
// memory), so the API server never sees a slow reader.
func (p *L7) gate(resp *http.Response) error {
	req, _ := resp.Request.Context().Value(requestKey{}).(Request)
	b := &pumped{p: p, req: req, up: resp.Body, ctx: resp.Request.Context(), wake: make(chan struct{}, 1)}
	p.mu.Lock()
	p.bodies[b] = struct{}{}
	p.mu.Unlock()
	p.wg.Add(1)
	go b.pump()
	resp.Body = b
	return nil
}

// pumped is a response body read upstream into memory and given to the
// client while not stalled.
type pumped struct {
	p    *L7
	req  Request
	up   io.ReadCloser
	ctx  context.Context
	wake chan struct{}

	mu   sync.Mutex
	buf  []byte
	err  error
	once sync.Once
}

func (b *pumped) pump() {
	defer b.p.wg.Done()
	chunk := make([]byte, 32<<10)
	for {
		n, err := b.up.Read(chunk)
		b.mu.Lock()
		b.buf = append(b.buf, chunk[:n]...)
		if err != nil {
			b.err = err
		}
		b.mu.Unlock()
		select {
		case b.wake <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

func (b *pumped) pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buf)
}

func (b *pumped) Read(out []byte) (int, error) {
	for {
		stalled, changed := b.p.stalled(b.req)
		if !stalled {
			b.mu.Lock()
			if len(b.buf) > 0 {
				n := copy(out, b.buf)
				b.buf = b.buf[n:]
				b.mu.Unlock()
				return n, nil
			}
			if b.err != nil {
				err := b.err
				b.mu.Unlock()
				return 0, err
			}
			b.mu.Unlock()
		}
		select {
		case <-b.wake:
		case <-changed:
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		case <-b.p.ctx.Done():
			return 0, b.p.ctx.Err()
		}
	}
}

func (b *pumped) Close() error {
	b.once.Do(func() {
		b.p.mu.Lock()
		delete(b.p.bodies, b)
		b.p.mu.Unlock()
	})
	return b.up.Close()
}

// held is a request waiting for Deliver.
type held struct {
	req     *http.Request // upstream, with the body read
	at      time.Time
	client  context.Context
	done    chan struct{}
	status  int
	header  http.Header
	body    []byte
	outcome Delivery
}

// held reads the request whole, queues it, and answers the client once
// it was delivered (if the client still waits then).
func (p *L7) held(w http.ResponseWriter, r *http.Request, req Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "proxy: read the request: "+err.Error(), http.StatusBadGateway)
		return
	}
	u := *p.upstream
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	up, err := http.NewRequestWithContext(p.ctx, r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	up.Header = r.Header.Clone()
	up.Header.Del("Authorization")
	up.ContentLength = int64(len(body))
	h := &held{req: up, at: time.Now(), client: r.Context(), done: make(chan struct{})}
	h.outcome = Delivery{Method: r.Method, Path: r.URL.Path, Held: h.at, Body: body}
	p.mu.Lock()
	p.queue = append(p.queue, h)
	p.mu.Unlock()
	select {
	case <-h.done:
	case <-r.Context().Done():
		return
	case <-p.ctx.Done():
		return
	}
	if h.status == 0 {
		http.Error(w, "proxy: "+h.outcome.Err, http.StatusBadGateway)
		return
	}
	for k, vs := range h.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body)
}

// deliver sends a held request upstream and wakes its handler.
func (p *L7) deliver(h *held) Delivery {
	defer close(h.done)
	h.outcome.Delivered = time.Now()
	h.outcome.Gone = h.client.Err() != nil
	resp, err := p.rt.RoundTrip(h.req)
	if err != nil {
		h.outcome.Err = err.Error()
		return h.outcome
	}
	defer func() { _ = resp.Body.Close() }()
	h.body, err = io.ReadAll(resp.Body)
	if err != nil {
		h.outcome.Err = err.Error()
		return h.outcome
	}
	h.status, h.header = resp.StatusCode, resp.Header
	h.outcome.Status, h.outcome.Response = resp.StatusCode, h.body
	return h.outcome
}

// selfSigned makes a CA and a serving certificate for 127.0.0.1 and
// localhost signed by it; it returns the CA's PEM.
func selfSigned() ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fault-suite proxy CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "fault-suite proxy"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: nil}, nil
}

// quietLog drops the server's own complaints (a client gone mid-stream).
func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
