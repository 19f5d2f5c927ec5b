// Package posting writes Kubernetes Events about handled objects, with the
// fields Kopf gives them, so that users see in `kubectl describe` what the
// operator did or could not do.
//
// Three ways lead to an Event: Post, which creates one at once (the engine's
// own warnings); Event and Enqueue, which queue it for the Poster's
// background loop (the handlers' explicit events, see handlers.Event); and
// LogSink, which turns handler log lines into Events when Settings.Loggers
// is on (off by default, as in Kopf 1.44).
package posting

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event types, as Kopf posts them.
const (
	TypeDebug   = "Debug"
	TypeNormal  = "Normal"
	TypeWarning = "Warning"
	TypeError   = "Error"
	// TypeFatal is what Kopf posts for critical log lines; logr has none,
	// but Event accepts it (at LevelError).
	TypeFatal = "Fatal"
)

// ReasonLogging is the reason of Events made from log lines.
const ReasonLogging = "Logging"

// Defaults of Kopf's posting settings, and of the Poster's own knobs.
const (
	DefaultReportingComponent = "kopf"
	DefaultReportingInstance  = "dev"
	DefaultNamePrefix         = "kopf-event-"
	// DefaultNamespace receives Events about cluster-scoped objects.
	DefaultNamespace = "default"
	// Action is the action field of every Event, as Kopf sets it.
	Action = "Action?"
	// MaxMessageLength is where messages are cut in the middle: the API
	// server rejects Events whose message is longer (in bytes).
	MaxMessageLength = 1024
	// DefaultQueueSize is how many Events may wait for the background loop.
	DefaultQueueSize = 1024
	// DefaultPostTimeout bounds one API call of the background loop.
	DefaultPostTimeout = 10 * time.Second
	// DefaultDrainTimeout bounds how long the background loop keeps posting
	// queued Events after the operator was told to stop.
	DefaultDrainTimeout = 5 * time.Second
)

// Poster creates Events through a client. Build it as a struct literal and
// use it by pointer; zero fields mean the defaults. Its fields must not
// change once it is in use.
//
// Post creates an Event at once. Enqueue, Event and the log sink put
// Events into a bounded queue, which Start (a manager.Runnable) drains in
// the background, as Kopf's poster task does: handlers never wait for the
// API server, and log lines, which are many and carry no context for a
// timeout, cost a channel send, not a request. A full queue drops Events
// (and says so) rather than stall a handler.
type Poster struct {
	Client client.Client
	// Scheme names the kinds of typed objects whose TypeMeta is empty.
	// Default: the client's scheme.
	Scheme             *runtime.Scheme
	ReportingComponent string
	ReportingInstance  string
	NamePrefix         string
	// DefaultNamespace receives Events about cluster-scoped objects.
	// Default: "default".
	DefaultNamespace string
	Now              func() time.Time
	// Settings are the gates of the queued Events (Kopf's settings.posting).
	Settings Settings
	// QueueSize, PostTimeout, DrainTimeout: see their defaults.
	QueueSize    int
	PostTimeout  time.Duration
	DrainTimeout time.Duration
	// Log receives the background loop's failures and dropped Events. It
	// must not post Events itself.
	Log logr.Logger

	setup   sync.Once
	queue   chan queued
	stopped chan struct{}
	started atomic.Bool
	// suffix makes the random end of queued Events' names; nil: five
	// characters, as the API server makes them for generateName.
	suffix func() string
}

// Ref identifies the object an Event is about.
type Ref struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
	UID       types.UID
}

// Post creates one Event now, ignoring Settings (the caller decides; see
// Allows). Events about Events are dropped silently, as in Kopf, so that a
// failing poster cannot feed on itself.
func (p *Poster) Post(ctx context.Context, ref Ref, eventType, reason, message string) error {
	if aboutEvent(ref) {
		return nil
	}
	return p.create(ctx, ref, eventType, reason, message, "")
}

// create posts an Event under the given name, or under a name that the
// API server generates if it is empty.
func (p *Poster) create(ctx context.Context, ref Ref, eventType, reason, message, name string) error {
	if p.Client == nil {
		return errors.New("post an event: the poster has no client")
	}
	ev := p.build(ref, eventType, reason, message)
	if name != "" {
		// The generateName stays, as Kopf's Events have it.
		ev.Name = name
	}
	if err := p.Client.Create(ctx, ev); err != nil {
		return fmt.Errorf("post event %s/%s about %s %s: %w", eventType, reason, ref.GVK.Kind, ref.Name, err)
	}
	return nil
}

// newName is a name for a queued Event: the prefix and a random suffix,
// as the API server would generate it from the prefix.
func (p *Poster) newName() string {
	suffix := p.suffix
	if suffix == nil {
		suffix = func() string { return utilrand.String(5) }
	}
	return orDefault(p.NamePrefix, DefaultNamePrefix) + suffix()
}

// build makes the Event body that Kopf would post.
func (p *Poster) build(ref Ref, eventType, reason, message string) *corev1.Event {
	now := metav1.NewTime(p.now())
	namespace := ref.Namespace
	if namespace == "" {
		namespace = orDefault(p.DefaultNamespace, DefaultNamespace)
	}
	component := orDefault(p.ReportingComponent, orDefault(p.Settings.ReportingComponent, DefaultReportingComponent))
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: orDefault(p.NamePrefix, DefaultNamePrefix),
			Namespace:    namespace,
		},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: ref.GVK.GroupVersion().String(),
			Kind:       ref.GVK.Kind,
			Name:       ref.Name,
			UID:        ref.UID,
			Namespace:  involvedNamespace(ref.Namespace, namespace),
		},
		Type:                eventType,
		Reason:              reason,
		Message:             Shorten(message),
		Action:              Action,
		Source:              corev1.EventSource{Component: component},
		ReportingController: component,
		ReportingInstance:   orDefault(p.ReportingInstance, orDefault(p.Settings.ReportingInstance, DefaultReportingInstance)),
		FirstTimestamp:      now,
		LastTimestamp:       now,
		EventTime:           metav1.NewMicroTime(now.Time),
		Count:               1,
	}
}

// involvedNamespace is the involvedObject's namespace: the object's own,
// empty for cluster-scoped objects (that is what `kubectl describe`
// searches for). The API server accepts an empty one only for Events in
// "default" or "kube-system"; elsewhere it takes the Event's namespace, as
// Kopf always does.
func involvedNamespace(own, eventNamespace string) string {
	if own != "" || eventNamespace == metav1.NamespaceDefault || eventNamespace == metav1.NamespaceSystem {
		return own
	}
	return eventNamespace
}

// aboutEvent tells Events about core v1 Events, which are never posted.
func aboutEvent(ref Ref) bool {
	return ref.GVK.Group == "" && ref.GVK.Kind == "Event"
}

// Shorten cuts messages longer than MaxMessageLength bytes in the middle,
// keeping both ends (where the cause and the outcome usually are) and
// whole UTF-8 characters. For ASCII it cuts as Kopf does: 511 bytes, "...",
// the last 510 bytes. Kopf counts characters; the API server counts bytes.
func Shorten(message string) string {
	if len(message) <= MaxMessageLength {
		return message
	}
	const infix = "..."
	head := MaxMessageLength/2 - len(infix)/2
	tail := MaxMessageLength - len(infix) - head
	for head > 0 && !utf8.RuneStart(message[head]) {
		head--
	}
	start := len(message) - tail
	for start < len(message) && !utf8.RuneStart(message[start]) {
		start++
	}
	return message[:head] + infix + message[start:]
}

func (p *Poster) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
