package handlers

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kopf-go/kopf/internal/posting"
)

// Objects are several objects that one Event is posted about, each, as in
// handlers.PostInfo(ctx, handlers.Objects{parent, child}, "Linked", "...").
// A list object (a *corev1.PodList, an *unstructured.UnstructuredList)
// works too.
type Objects []client.Object

// GetObjectKind is empty: Objects is no Kubernetes kind. (Objects is a
// runtime.Object only so that it can be passed where one object or a list
// is.)
func (Objects) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies every object.
func (o Objects) DeepCopyObject() runtime.Object { return posting.Objects(o).DeepCopyObject() }

// PostEvent posts a Kubernetes Event of any type about objs: one object, a
// list, or Objects (Kopf's kopf.event). Every function that posts an
// Event is named Post...: PostInfo, PostWarning, PostException. It works from any handler, daemon or timer: the engine's
// poster comes with ctx. The Event is queued and posted in the background,
// so the handler does not wait for the API server; failures are logged,
// never returned, as in Kopf.
//
// The gates of the posting settings (Options.Posting, events.Settings) apply alike to
// PostEvent, PostInfo, PostWarning and PostException: nothing is posted when posting is
// disabled, nor when the level of the type (Debug; Normal or any custom
// type; Warning; Error) is below the configured level.
func PostEvent(ctx context.Context, objs runtime.Object, eventType, reason, message string) {
	post(ctx, objs, eventType, reason, message)
}

// PostInfo posts a Normal Event (Kopf's kopf.info).
func PostInfo(ctx context.Context, objs runtime.Object, reason, message string) {
	post(ctx, objs, posting.TypeNormal, reason, message)
}

// PostWarning posts a Warning Event (Kopf's kopf.warn).
func PostWarning(ctx context.Context, objs runtime.Object, reason, message string) {
	post(ctx, objs, posting.TypeWarning, reason, message)
}

// PostException posts an Error Event about err (Kopf's kopf.exception). An
// empty reason becomes the name of err's type (the first exported type in
// its chain, "Error" if none); the message is "message err", or either of
// them alone.
func PostException(ctx context.Context, objs runtime.Object, reason, message string, err error) {
	if reason == "" {
		reason = posting.ReasonOfError(err)
	}
	post(ctx, objs, posting.TypeError, reason, posting.MessageOfError(message, err))
}

// post hands the Event to the poster of ctx. Its own log lines are never
// posted, so that a failing Event cannot make another one.
func post(ctx context.Context, objs runtime.Object, eventType, reason, message string) {
	if o, ok := objs.(Objects); ok {
		objs = posting.Objects(o)
	}
	log := posting.Local(logr.FromContextOrDiscard(ctx))
	p := posting.FromContext(ctx)
	if p == nil {
		log.Info("No event is posted: the context has no poster (is this called from a handler?).",
			"type", eventType, "reason", reason, "message", message)
		return
	}
	if err := p.Event(objs, eventType, reason, message); err != nil {
		log.Error(err, "Failed to post an event.", "type", eventType, "reason", reason)
	}
}

// LocalLogger returns the logger whose lines are never posted as Events
// (its lines carry events.LocalKey, Kopf's k8s_skip), when
// Options.Posting.Loggers posts the others.
func LocalLogger(log logr.Logger) logr.Logger { return posting.Local(log) }
