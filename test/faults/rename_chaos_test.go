//go:build chaos

package faults

import (
	"testing"
	"time"

	"github.com/kopf-go/kopf/pkg/kopftest"
)

// TestRingRenamed is the ring's rolling rename alone, on three replicas
// of slowness 0, 2 and 4 s (scaled with -chaos.short), while the driver
// changes objects: the checker must find no overlap. TestChaos injects
// the same fault among the others.
//
//	go test -tags chaos ./test/faults -run TestRingRenamed -args [-chaos.short]
func TestRingRenamed(t *testing.T) {
	kopftest.NoLeaks(t)
	d, scale := defaults, 1.0
	if *chaosShort {
		d, scale = shortened, 0.4
	}
	s := newSuite(t, "renamed", d, func(line string) { t.Log(line) })
	s.start([]time.Duration{0, scaled(2*time.Second, scale), scaled(4*time.Second, scale)}, 12, 500*time.Millisecond, 1)
	s.alone(d, step{kind: ringRenamed, slow: -1})
}
