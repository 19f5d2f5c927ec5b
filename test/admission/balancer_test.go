package admission

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// balancer is a TCP load balancer for the webhook replicas, as a Service
// is: the API server calls one address, and each connection goes to the
// next of the backends that are in service (TLS passes through). A
// backend taken out of service gets no new connections; those it has stay
// until either side closes them, as kube-proxy leaves them when a Pod
// stops being ready.
type balancer struct {
	l    net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	live []string
	next int
	open map[net.Conn]bool
}

// newBalancer listens on host and serves until the test ends.
func newBalancer(t *testing.T, host string) *balancer {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{l: l, open: map[net.Conn]bool{}}
	b.wg.Go(b.accept)
	t.Cleanup(b.close)
	return b
}

// addr is where the balancer listens.
func (b *balancer) addr() string { return b.l.Addr().String() }

// add puts a backend in service.
func (b *balancer) add(backend string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.live = append(b.live, backend)
}

// remove takes a backend out of service.
func (b *balancer) remove(backend string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, l := range b.live {
		if l == backend {
			b.live = append(b.live[:i], b.live[i+1:]...)
			return
		}
	}
}

// pick returns the backends in the order to try them for a connection.
func (b *balancer) pick() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.live) == 0 {
		return nil
	}
	b.next = (b.next + 1) % len(b.live)
	return append(append([]string(nil), b.live[b.next:]...), b.live[:b.next]...)
}

// track records an open connection; false once the balancer is closed.
func (b *balancer) track(c net.Conn, open bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open == nil {
		return false
	}
	if open {
		b.open[c] = true
	} else {
		delete(b.open, c)
	}
	return true
}

func (b *balancer) accept() {
	for {
		in, err := b.l.Accept()
		if err != nil {
			return // closed
		}
		if !b.track(in, true) {
			_ = in.Close()
			return
		}
		b.wg.Go(func() { b.proxy(in) })
	}
}

// proxy connects a client to the first backend that answers, and copies
// both ways until either side is done.
func (b *balancer) proxy(in net.Conn) {
	defer b.track(in, false)
	defer func() { _ = in.Close() }()
	var out net.Conn
	for _, backend := range b.pick() {
		c, err := net.DialTimeout("tcp", backend, time.Second)
		if err == nil {
			out = c
			break
		}
	}
	if out == nil || !b.track(out, true) {
		if out != nil {
			_ = out.Close()
		}
		return
	}
	defer b.track(out, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
	_ = out.Close()
	_ = in.Close()
	<-done
}

// close stops listening, closes every connection, and waits for the
// balancer's goroutines.
func (b *balancer) close() {
	_ = b.l.Close()
	b.mu.Lock()
	open := b.open
	b.open = nil
	b.mu.Unlock()
	for c := range open {
		_ = c.Close()
	}
	b.wg.Wait()
}
