// Package proxy is a TCP proxy that cuts one replica off from the API
// server on command: it forwards raw bytes (TLS passes through untouched)
// until told to refuse connections or to swallow them, and forwards again
// once healed. The fault suite puts one in front of every replica, so that
// a partition hits one replica and leaves the others alone.
package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Mode is what the proxy does with connections.
type Mode int

const (
	// Pass forwards bytes both ways.
	Pass Mode = iota
	// Refuse closes every open connection and stops listening, so that
	// new connections are refused by the kernel (ECONNREFUSED), as when
	// the API server's host is unreachable with a reset.
	Refuse
	// Hang is a black hole: open connections stop moving bytes in both
	// directions, and new connections are accepted but never answered.
	// Nothing is closed, so that clients find out only by their timeouts.
	Hang
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Refuse:
		return "refuse"
	case Hang:
		return "hang"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy forwards the connections accepted on its address to the target.
// Its goroutines (one acceptor, two pumps per connection) all end by
// Close, which waits for them.
type Proxy struct {
	target string
	addr   string

	mu     sync.Mutex
	mode   Mode
	closed bool
	ln     net.Listener
	// flowing is closed while the mode lets bytes flow; a Hang replaces
	// it with an open channel, which the next heal closes.
	flowing chan struct{}
	conns   map[*link]struct{}

	wg sync.WaitGroup
}

// Start listens on 127.0.0.1 at a free port and forwards to target
// (host:port) in mode Pass.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the proxy to %s: %w", target, err)
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), flowing: make(chan struct{}), conns: map[*link]struct{}{}}
	close(p.flowing)
	p.serve(ln)
	return p, nil
}

// Addr is the address clients connect to; it stays the same across modes.
func (p *Proxy) Addr() string { return p.addr }

// Mode is the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Set switches the mode; Pass heals. Leaving Refuse listens again on the
// same address, which fails only if another program took the port
// meanwhile.
func (p *Proxy) Set(m Mode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("set the proxy's mode: the proxy is closed")
	}
	if m == p.mode {
		return nil
	}
	switch m {
	case Refuse:
		p.stopListening()
		for l := range p.conns {
			l.close()
		}
	case Hang:
		if p.ln == nil {
			if err := p.listen(); err != nil {
				return err
			}
		}
		p.flowing = make(chan struct{})
	case Pass:
		if p.ln == nil {
			if err := p.listen(); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("set the proxy's mode: unknown %s", m)
	}
	if p.mode == Hang {
		close(p.flowing) // the held bytes and connections move again
	}
	p.mode = m
	return nil
}

// Close stops listening, closes every connection, and waits until all of
// the proxy's goroutines have returned.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.stopListening()
	for l := range p.conns {
		l.close()
	}
	if p.mode == Hang {
		close(p.flowing)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// listen opens the listener on the proxy's address again; p.mu is held.
func (p *Proxy) listen() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("listen again on %s: %w", p.addr, err)
	}
	p.serve(ln)
	return nil
}

// stopListening closes the listener, if any; p.mu is held.
func (p *Proxy) stopListening() {
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
}

// serve starts the acceptor of ln; p.mu is held or the proxy is new.
func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Refuse or Close
			}
			p.admit(c)
		}
	}()
}

// admit starts forwarding a new connection, or closes it if the proxy
// has stopped meanwhile.
func (p *Proxy) admit(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == Refuse {
		_ = c.Close()
		return
	}
	l := &link{client: c, done: make(chan struct{})}
	p.conns[l] = struct{}{}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.forward(l)
		p.mu.Lock()
		delete(p.conns, l)
		p.mu.Unlock()
	}()
}

// gate returns the channel that is closed while bytes may flow.
func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flowing
}

// forward connects a client to the target once bytes may flow (a
// connection accepted during a Hang waits, unanswered), then pumps both
// ways until either side ends or the link is closed.
func (p *Proxy) forward(l *link) {
	defer l.close()
	if !l.wait(p.gate()) {
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return // the client sees its connection closed, as with a dead server
	}
	if !l.attach(server) {
		_ = server.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.pump(l, server, l.client); done <- struct{}{} }()
	go func() { p.pump(l, l.client, server); done <- struct{}{} }()
	<-done
	l.close() // one side ended: end the other, as a TCP proxy does
	<-done
}

// pump copies src to dst; before each write it waits until bytes may
// flow, so that a Hang holds what was read until it heals.
func (p *Proxy) pump(l *link, dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !l.wait(p.gate()) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
		if !l.wait(p.gate()) {
			return
		}
	}
}

// link is one client connection and, once dialled, its server side.
type link struct {
	mu     sync.Mutex
	client net.Conn
	server net.Conn
	done   chan struct{}
	closed bool
}

// wait blocks until gate is closed (true) or the link is (false).
func (l *link) wait(gate <-chan struct{}) bool {
	select {
	case <-gate:
		select {
		case <-l.done:
			return false
		default:
			return true
		}
	case <-l.done:
		return false
	}
}

// attach records the server side; false if the link closed meanwhile.
func (l *link) attach(server net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.server = server
	return true
}

// close closes both sides, once.
func (l *link) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	close(l.done)
	_ = l.client.Close()
	if l.server != nil {
		_ = l.server.Close()
	}
}
