// Package posting writes Kubernetes Events about handled objects, with the
// fields Kopf gives them, so that users see in `kubectl describe` what the
// operator did or could not do.
package posting

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event types, as Kopf posts them.
const (
	TypeNormal  = "Normal"
	TypeWarning = "Warning"
	TypeError   = "Error"
)

// Defaults of Kopf's posting settings.
const (
	DefaultReportingComponent = "kopf"
	DefaultReportingInstance  = "dev"
	DefaultNamePrefix         = "kopf-event-"
	// MaxMessageLength is where messages are cut in the middle.
	MaxMessageLength = 1024
)

// Poster creates Events through a client.
type Poster struct {
	Client             client.Client
	ReportingComponent string
	ReportingInstance  string
	NamePrefix         string
	// DefaultNamespace receives Events about cluster-scoped objects.
	DefaultNamespace string
	Now              func() time.Time
}

// Ref identifies the object an Event is about.
type Ref struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
	UID       types.UID
}

// Post creates one Event. Events about Events are dropped silently, as in
// Kopf, so that a failing poster cannot feed on itself.
func (p *Poster) Post(ctx context.Context, ref Ref, eventType, reason, message string) error {
	if ref.GVK.Group == "" && ref.GVK.Kind == "Event" {
		return nil
	}
	now := metav1.NewTime(p.now())
	namespace := ref.Namespace
	if namespace == "" {
		namespace = p.DefaultNamespace
		if namespace == "" {
			namespace = "default"
		}
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: orDefault(p.NamePrefix, DefaultNamePrefix),
			Namespace:    namespace,
		},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: ref.GVK.GroupVersion().String(),
			Kind:       ref.GVK.Kind,
			Name:       ref.Name,
			UID:        ref.UID,
			Namespace:  ref.Namespace,
		},
		Type:                eventType,
		Reason:              reason,
		Message:             Shorten(message),
		Action:              "Action?",
		Source:              corev1.EventSource{Component: orDefault(p.ReportingComponent, DefaultReportingComponent)},
		ReportingController: orDefault(p.ReportingComponent, DefaultReportingComponent),
		ReportingInstance:   orDefault(p.ReportingInstance, DefaultReportingInstance),
		FirstTimestamp:      now,
		LastTimestamp:       now,
		EventTime:           metav1.NewMicroTime(now.Time),
		Count:               1,
	}
	if err := p.Client.Create(ctx, ev); err != nil {
		return fmt.Errorf("post event %s/%s about %s %s: %w", eventType, reason, ref.GVK.Kind, ref.Name, err)
	}
	return nil
}

// Shorten cuts messages longer than MaxMessageLength in the middle, keeping
// both ends (where the cause and the outcome usually are).
func Shorten(message string) string {
	runes := []rune(message)
	if len(runes) <= MaxMessageLength {
		return message
	}
	const ellipsis = "..."
	half := (MaxMessageLength - len(ellipsis)) / 2
	return string(runes[:half]) + ellipsis + string(runes[len(runes)-(MaxMessageLength-len(ellipsis)-half):])
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
