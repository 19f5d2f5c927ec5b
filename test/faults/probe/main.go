// Command probe is the fault suite's operator: a create, an update and a
// delete handler and a daemon for KopfExample objects, and a create
// handler alone for Incarnation objects, each of which records when it
// starts, every 50 ms while it runs, and when it ends (package
// activity), so that the checker can tell which replicas were active on
// an object at any moment. It checks nothing itself: it shows what the
// library lets happen.
//
// Its own flags come first, then "--" and the standalone runner's flags:
//
//	probe --records=r.jsonl --slow=2s -- --shard-ring=faults --namespace=ns --verbose
//
// POD_ID names the replica; the actor in its records is POD_ID/pid, so
// that a restarted replica is another actor.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/test/faults/activity"

	"github.com/kopf-go/kopf/pkg/cause"
)

// retryDelay is how soon a handler cut short by cancellation runs again,
// should its replica keep the object: far below Kopf's 60 s, so that the
// suite's short runs see every object through.
const retryDelay = time.Second

// The Incarnation kind (incarnations.yaml): its handlers need no
// finalizer, so that nothing but the ring keeps an object's name taken
// while a replica works on it.
const (
	incarnationGroup   = "faults.kopf.dev"
	incarnationVersion = "v1"
	incarnationKind    = "Incarnation"
)

// config is the probe's own command line.
type config struct {
	records                string
	create, update, delete time.Duration
	incarnation            time.Duration
	slow                   time.Duration
	ignoreStop             bool
	sharding               handlers.Sharding
}

func parse(args []string) (config, []string, error) {
	var c config
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.StringVar(&c.records, "records", os.Getenv("PROBE_RECORDS"), "the file to append activity records to")
	fs.DurationVar(&c.create, "create", 3*time.Second, "how long the create handler works")
	fs.DurationVar(&c.update, "update", time.Second, "how long the update handler works")
	fs.DurationVar(&c.delete, "delete", time.Second, "how long the delete handler works")
	fs.DurationVar(&c.incarnation, "incarnation", 20*time.Second, "how long the Incarnation's create handler works (longer than a join takes)")
	fs.DurationVar(&c.slow, "slow", 0, "how long handlers and daemons go on after their context is cancelled")
	fs.BoolVar(&c.ignoreStop, "ignore-stop", false, "daemons ignore their cancellation altogether")
	fs.DurationVar(&c.sharding.LeaseDuration, "lease-duration", 0, "Options.Sharding.LeaseDuration (0: the library's default)")
	fs.DurationVar(&c.sharding.RenewDeadline, "renew-deadline", 0, "Options.Sharding.RenewDeadline (0: the default)")
	fs.DurationVar(&c.sharding.RenewPeriod, "renew-period", 0, "Options.Sharding.RenewPeriod (0: the default)")
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	if c.records == "" {
		return c, nil, fmt.Errorf("--records (or $PROBE_RECORDS) is required")
	}
	return c, fs.Args(), nil
}

func main() {
	c, runnerArgs, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(2)
	}
	log, err := activity.Open(c.records)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(2)
	}
	p := &probe{log: log, actor: fmt.Sprintf("%s/%d", os.Getenv("POD_ID"), os.Getpid()), slow: c.slow}

	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "create", p.handler(activity.Create, c.create), handlers.Backoff(retryDelay))
	handlers.OnUpdate(kex, "update", p.handler(activity.Update, c.update), handlers.Backoff(retryDelay))
	handlers.OnDelete(kex, "delete", p.handler(activity.Delete, c.delete), handlers.Backoff(retryDelay))
	handlers.Daemon(kex, "daemon", p.daemon(c.ignoreStop), handlers.Backoff(retryDelay))
	// One change handler and nothing else: no delete handler, no daemon.
	inc := handlers.ForKind(reg, incarnationGroup, incarnationVersion, incarnationKind)
	handlers.OnCreate(inc, "create", p.handler(activity.Create, c.incarnation), handlers.Backoff(retryDelay))

	// handlers.Main reads the runner's flags from os.Args; the probe's own
	// flags are not among them.
	os.Args = append(os.Args[:1], runnerArgs...)
	handlers.Main(reg, handlers.RunOptions{Options: handlers.Options{Sharding: c.sharding}})
}

// handler is a change handler that works for d, beating, and stops
// (after the slowness) if cancelled first. Its result names its writer:
// the library stores it in status.<id> (create, update, delete), so
// that the suite's watcher sees which actor's write made which version.
func (p *probe) handler(what string, d time.Duration) handlers.ChangeFunc[*unstructured.Unstructured] {
	return func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		r := p.begin(obj, what)
		if !r.work(ctx, d, false) {
			return nil, handlers.Temporary(errors.New("cancelled"), retryDelay)
		}
		return r.result(), nil
	}
}

// daemon beats until its context is cancelled (and the slowness has
// passed), or forever if it ignores its stop.
func (p *probe) daemon(ignoreStop bool) handlers.DaemonFunc[*unstructured.Unstructured] {
	return func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Daemon) (any, error) {
		p.begin(obj, activity.Daemon).work(ctx, 0, ignoreStop)
		return nil, nil
	}
}
