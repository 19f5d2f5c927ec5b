package handlers

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kopf-go/kopf/internal/posting"
)

// Objects are several objects that one Event is posted about, each, as in
// handlers.PostInfo(ctx, handlers.Objects{parent, child}, "Linked", "...").
// A list object (a *corev1.PodList, an *unstructured.UnstructuredList)
// works too.
type Objects = posting.Objects

// PostEvent posts a Kubernetes Event of any type about objs: one object, a
// list, or Objects (Kopf's kopf.event). Every function that posts an
// Event is named Post...: PostInfo, PostWarning, PostException. It works from any handler, daemon or timer: the engine's
// poster comes with ctx. The Event is queued and posted in the background,
// so the handler does not wait for the API server; failures are logged,
// never returned, as in Kopf.
//
// The gates of the posting settings (posting.Settings) apply alike to
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

// PostingSettings are the gates of Events (Kopf's settings.posting):
// Disabled, Level, and Loggers (log lines of handlers posted as Events);
// and who posts them, ReportingComponent ("kopf") and ReportingInstance
// ("dev"). Options.Posting takes them; the zero value is Kopf's defaults.
type PostingSettings = posting.Settings

// PostingLevel is the least level of the Events that are posted.
type PostingLevel = posting.Level

// The levels of PostingSettings.Level, as Kopf's logging levels.
const (
	PostingLevelDebug   PostingLevel = posting.LevelDebug
	PostingLevelInfo    PostingLevel = posting.LevelInfo
	PostingLevelWarning PostingLevel = posting.LevelWarning
	PostingLevelError   PostingLevel = posting.LevelError
)

// LocalKey, with the value true in a log line's values, keeps the line out
// of Events when PostingSettings.Loggers is on (Kopf's k8s_skip).
const LocalKey = posting.LocalKey

// LocalLogger returns the logger whose lines are never posted as Events.
func LocalLogger(log logr.Logger) logr.Logger { return posting.Local(log) }
