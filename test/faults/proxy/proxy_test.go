package proxy

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// quiet is how long a read waits before the test concludes that no bytes
// come: long enough for loopback, short enough for a unit test.
const quiet = 200 * time.Millisecond

// echoServer echoes every connection until the test ends, and waits for
// its goroutines then.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// start starts a proxy to the target and closes it when the test ends.
func start(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// outcome is what a connection saw when it sent a message and read for
// a while: the echo, silence, or its end.
type outcome string

const (
	echoed  outcome = "echoed"
	silent  outcome = "silent"
	closed  outcome = "closed"
	refused outcome = "refused"
)

// roundTrip writes msg and reads for up to wait.
func roundTrip(c net.Conn, msg string, wait time.Duration) outcome {
	if _, err := c.Write([]byte(msg)); err != nil {
		return closed
	}
	return readBack(c, msg, wait)
}

// readBack reads len(msg) bytes for up to wait.
func readBack(c net.Conn, msg string, wait time.Duration) outcome {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	switch {
	case err == nil && string(buf) == msg:
		return echoed
	case errors.Is(err, os.ErrDeadlineExceeded):
		return silent
	default:
		return closed
	}
}

// dialOutcome dials addr and, if that works, round-trips msg.
func dialOutcome(addr, msg string) (outcome, net.Conn) {
	c, err := net.Dial("tcp", addr)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return refused, nil
	case err != nil:
		return outcome("dial: " + err.Error()), nil
	}
	return roundTrip(c, msg, quiet), c
}

// Each mode as an open connection and a new one see it, and what both
// see once the proxy is healed.
func TestModes(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered: runs after the other cleanups
	tests := []struct {
		mode Mode
		// open and fresh: what an open connection and a new one see in
		// the mode.
		open, fresh outcome
		// healedOpen: what the open connection sees after the heal: a
		// hung one gets its held echo, a refused one stays closed.
		healedOpen outcome
		// healedFresh: what the new connection of the mode sees after
		// the heal; "" if it was never made.
		healedFresh outcome
	}{
		{mode: Pass, open: echoed, fresh: echoed, healedOpen: echoed, healedFresh: echoed},
		{mode: Refuse, open: closed, fresh: refused, healedOpen: closed},
		{mode: Hang, open: silent, fresh: silent, healedOpen: echoed, healedFresh: echoed},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			p := start(t, echoServer(t))
			open := dial(t, p.Addr())
			if got := roundTrip(open, "before", quiet*5); got != echoed {
				t.Fatalf("before the fault, the round trip was %s", got)
			}
			if err := p.Set(tt.mode); err != nil {
				t.Fatal(err)
			}
			got := struct{ Open, Fresh, HealedOpen, HealedFresh, AfterHeal outcome }{}
			got.Open = roundTrip(open, "during", quiet)
			var fresh net.Conn
			got.Fresh, fresh = dialOutcome(p.Addr(), "fresh")
			if fresh != nil {
				defer func() { _ = fresh.Close() }()
			}
			if err := p.Set(Pass); err != nil {
				t.Fatal(err)
			}
			// What was held comes now; what was cut stays cut.
			switch got.Open {
			case silent:
				got.HealedOpen = readBack(open, "during", quiet*5)
			case echoed:
				got.HealedOpen = roundTrip(open, "after", quiet*5)
			default:
				got.HealedOpen = roundTrip(open, "after", quiet)
			}
			if fresh != nil {
				if got.Fresh == silent {
					got.HealedFresh = readBack(fresh, "fresh", quiet*5)
				} else {
					got.HealedFresh = roundTrip(fresh, "again", quiet*5)
				}
			}
			var after net.Conn
			got.AfterHeal, after = dialOutcome(p.Addr(), "new")
			if after != nil {
				_ = after.Close()
			}
			want := struct{ Open, Fresh, HealedOpen, HealedFresh, AfterHeal outcome }{
				tt.open, tt.fresh, tt.healedOpen, tt.healedFresh, echoed}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("outcomes -want +got:\n%s", diff)
			}
		})
	}
}

// A fault can follow another without a heal between them, and the proxy
// keeps its address throughout.
func TestModeSequence(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered: runs after the other cleanups
	p := start(t, echoServer(t))
	addr := p.Addr()
	var got []outcome
	for _, m := range []Mode{Hang, Refuse, Hang, Pass, Refuse, Pass} {
		if err := p.Set(m); err != nil {
			t.Fatal(err)
		}
		o, c := dialOutcome(p.Addr(), "x")
		if c != nil {
			_ = c.Close()
		}
		got = append(got, o)
	}
	want := []outcome{silent, refused, silent, echoed, refused, echoed}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes -want +got:\n%s", diff)
	}
	if p.Addr() != addr {
		t.Errorf("the address changed from %s to %s", addr, p.Addr())
	}
}

// Close ends held connections too, and what comes after it is an error.
func TestCloseDuringHang(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered: runs after the other cleanups
	p := start(t, echoServer(t))
	open := dial(t, p.Addr())
	if err := p.Set(Hang); err != nil {
		t.Fatal(err)
	}
	_, fresh := dialOutcome(p.Addr(), "held")
	if fresh != nil {
		defer func() { _ = fresh.Close() }()
	}
	if got := roundTrip(open, "held", quiet); got != silent {
		t.Fatalf("in a hang, the open connection was %s", got)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readBack(open, "held", quiet*5); got != closed {
		t.Errorf("after Close, the open connection was %s, want closed", got)
	}
	if err := p.Set(Pass); err == nil {
		t.Error("Set after Close succeeded")
	}
}

// A server that goes away closes the client's connection: the proxy
// passes the end on rather than holding the client.
func TestServerGone(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered: runs after the other cleanups
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	_ = ln.Close() // nobody listens there now
	p := start(t, target)
	c := dial(t, p.Addr())
	if got := roundTrip(c, "x", quiet*5); got != closed {
		t.Errorf("with no server, the connection was %s, want closed", got)
	}
}
