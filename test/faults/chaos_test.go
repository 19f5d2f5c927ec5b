//go:build chaos

package faults

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

var (
	chaosDuration = flag.Duration("chaos.duration", 10*time.Minute, "how long to inject faults")
	chaosFaults   = flag.Int("chaos.faults", 100, "inject at least this many faults, however long it takes")
	chaosSeed     = flag.Uint64("chaos.seed", 0, "the seed of the fault schedule (0: a new one, printed)")
	chaosShort    = flag.Bool("chaos.short", false, "shortened durations (lease 6 s, renew deadline 4 s, renew period 2 s), slowness 0/0.8/1.6 s")
	chaosReplicas = flag.Int("chaos.replicas", 5, "the ring's replicas at the start")
)

// shortened are the durations of -chaos.short: the library's defaults
// scaled to 0.4, margin included (2 s instead of 5 s).
var shortened = timing{lease: 6 * time.Second, deadline: 4 * time.Second, period: 2 * time.Second}

// TestChaos injects random faults, overlapping in time, into a ring of
// about five replicas for -chaos.duration and at least -chaos.faults
// faults, every kind of fault at least once, while a driver changes
// objects. The schedule (which fault when, for how long, which slowness
// of victim) comes from -chaos.seed alone; the victims are chosen among
// the replicas that can be one when the fault comes. It prints every
// fault as it is injected, and at the end every overlap and the figures
// per kind of fault, as a Markdown table.
//
//	make chaos
//	go test -tags chaos ./test/faults -run TestChaos -timeout 90m -args -chaos.duration=10m -chaos.seed=N [-chaos.short]
func TestChaos(t *testing.T) {
	kopftest.NoLeaks(t) // every goroutine of the suite has ended when the test does
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	d, scale := defaults, 1.0
	if *chaosShort {
		d, scale = shortened, 0.4
	}
	e := d.effective()
	t.Logf("chaos: seed %d, %s of faults (at least %d), durations lease %s / renew deadline %s / renew period %s; reproduce with -chaos.seed=%d",
		seed, *chaosDuration, *chaosFaults, e.lease, e.deadline, e.period, seed)
	fmt.Fprintf(os.Stderr, "chaos: seed %d\n", seed)

	slows := []time.Duration{0, scaled(2*time.Second, scale), scaled(4*time.Second, scale)}
	plan := newChaosPlan(seed, *chaosDuration, *chaosFaults, e, slows, scale)

	s := newSuite(t, "chaos", d, func(line string) { t.Log(line) })
	s.rng, s.allowAssigner, s.lenient, s.minRing = rand.New(rand.NewPCG(seed, 2)), true, true, 3
	var initial []time.Duration
	for i := range *chaosReplicas {
		initial = append(initial, slows[i%len(slows)])
	}
	s.start(initial, 6*(*chaosReplicas), 500*time.Millisecond, seed)
	// Steps until the duration is over, enough faults began and every
	// kind did, or three times the duration, whichever comes first.
	ctx := context.Background()
	start := time.Now()
	for (time.Since(start) < *chaosDuration || s.injected() < *chaosFaults || len(s.missing()) > 0 || !s.begun(ringRenamed)) &&
		time.Since(start) < 3**chaosDuration {
		p := plan.next()
		t.Logf("step %d: %s", plan.n, p)
		sleep(ctx, time.Until(start.Add(p.at)))
		s.step(ctx, p)
	}
	s.wait()
	bound := takeoverBound(d)
	s.settle(bound)
	rep := s.finish()

	injected := s.injected()
	t.Logf("%s\n%d faults injected, %d planned steps found no victim:\n  %s", s.drv.summary(), injected, len(s.skips),
		strings.Join(s.skips, "\n  "))
	t.Logf("the report:\n%s", rep.Text())
	t.Logf("the figures (seed %d, lease %s, renew deadline %s, renew period %s, slowness %v):\n%s",
		seed, e.lease, e.deadline, e.period, slows, rep.Markdown())
	s.judge(rep, bound, false)
	if injected < *chaosFaults {
		t.Errorf("only %d faults were injected, want at least %d", injected, *chaosFaults)
	}
	if missing := s.missing(); len(missing) > 0 {
		t.Errorf("no fault of these kinds was injected: %v", missing)
	}
	if !s.begun(ringRenamed) {
		t.Errorf("no fault of the kind %s was injected", ringRenamed)
	}
	t.Logf("TestChaos took %s; seed %d", time.Since(s.began).Round(time.Second), seed)
}

// chaosKinds are the faults TestChaos draws from: every kind of
// faultlog.Kinds, and the ring's rolling rename, too long for TestFaults.
var chaosKinds = append(slices.Clone(faultlog.Kinds), ringRenamed)

// scaled scales a duration.
func scaled(d time.Duration, by float64) time.Duration { return time.Duration(float64(d) * by) }

// chaosPlan draws the faults of a schedule from a seeded generator:
// every kind once first, in a random order, then kinds at random, each
// beginning a random while after the one before (shorter than most
// faults last, so that they overlap in time), with random holds beyond
// a lease and a random slowness wanted of the victim. The k-th step is
// the same for a seed whatever happens in the run.
type chaosPlan struct {
	rng    *rand.Rand
	d      timing
	slows  []time.Duration
	scale  float64
	mean   time.Duration
	first  []string
	at     time.Duration
	n, ids int
}

func newChaosPlan(seed uint64, duration time.Duration, faults int, d timing, slows []time.Duration, scale float64) *chaosPlan {
	rng := rand.New(rand.NewPCG(seed, 1))
	first := slices.Clone(chaosKinds)
	rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	// A few more steps than faults wanted: some find no victim.
	return &chaosPlan{rng: rng, d: d, slows: slows, scale: scale, mean: duration * 10 / time.Duration(faults*13), first: first}
}

// next is the schedule's next step.
func (c *chaosPlan) next() step {
	kind := chaosKinds[c.rng.IntN(len(chaosKinds))]
	if c.n < len(c.first) {
		kind = c.first[c.n]
	}
	c.n++
	extra := scaled(time.Duration(c.rng.Int64N(int64(10*time.Second))), c.scale)
	p := step{at: c.at, kind: kind, slow: c.slows[c.rng.IntN(len(c.slows))], hold: c.d.lease + scaled(time.Second, c.scale) + extra}
	switch kind {
	case faultlog.RestartBefore:
		p.offset = -scaled(time.Second, c.scale)
	case faultlog.RestartAfter:
		p.offset = scaled(time.Second, c.scale)
	case faultlog.Join:
		c.ids++
		p.podID = fmt.Sprintf("joined-%d", c.ids)
	case faultlog.NameReused:
		c.ids++
		p.podID = fmt.Sprintf("reuser-%d", c.ids)
	case faultlog.TermIgnored:
		c.ids++
		p.podID = fmt.Sprintf("stubborn-%d", c.ids)
		p.hold = 2 * c.d.lease // long enough to get objects by handover
	case faultlog.Leave, faultlog.LabelEdited, faultlog.LeaseDeleted:
		p.hold = 0
	}
	c.at += c.mean/2 + time.Duration(c.rng.Int64N(int64(c.mean)))
	return p
}
