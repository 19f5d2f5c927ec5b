package metrics

import "github.com/prometheus/client_golang/prometheus"

// CallbackPanics is the metric of the operator's callbacks that panicked.
const CallbackPanics = "kopf_callback_panics_total"

// LabelCallback names the kind of callback that panicked.
const LabelCallback = "callback"

// Callbacks, the values of the callback label: a closed set, one per kind
// of code of the operator's that the engine calls (docs/metrics.md).
const (
	// CallbackChange: a change handler (create, update, delete, resume,
	// field), or a sub-handler.
	CallbackChange = "change"
	// CallbackEvent: an on-event handler.
	CallbackEvent = "event"
	// CallbackChild: a child handler (handlers.OnChild).
	CallbackChild = "child"
	// CallbackIndex: an index handler's function.
	CallbackIndex = "index"
	// CallbackDaemon and CallbackTimer: a daemon's or a timer's function.
	CallbackDaemon = "daemon"
	CallbackTimer  = "timer"
	// CallbackDelay: a daemon's or a timer's initial delay function.
	CallbackDelay = "delay"
	// CallbackFilter: a filter of a handler of any kind (When, or a
	// function of Labels, Annotations or Value).
	CallbackFilter = "filter"
	// CallbackWebhook: a validating or mutating handler.
	CallbackWebhook = "webhook"
	// CallbackStartup, CallbackCleanup, CallbackLogin, CallbackProbe: the
	// operator-wide handlers.
	CallbackStartup = "startup"
	CallbackCleanup = "cleanup"
	CallbackLogin   = "login"
	CallbackProbe   = "probe"
	// CallbackStorage: a progress or diff-base storage of the operator's
	// own (the handler label says which: StorageProgress, StorageDiffBase).
	CallbackStorage = "storage"
	// CallbackEncoding: a value of the operator's whose own encoding or
	// copy panicked on the engine's way, outside any one handler's call (a
	// value put into a patch, a typed object's MarshalJSON or DeepCopy);
	// its handler label is empty.
	CallbackEncoding = "encoding"
	// CallbackClient: the operator's wrapper of the engine's client
	// (Options.WrapClient).
	CallbackClient = "client"
)

// The handler label of storages' panics.
const (
	StorageProgress = "progress"
	StorageDiffBase = "diffbase"
)

var callbackPanics = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: CallbackPanics,
	Help: "Panics of the operator's callbacks, each contained and treated as that callback's failure, by the kind of callback and its handler.",
}, []string{LabelKind, LabelCallback, LabelHandler})

// CallbackPanicked counts one panic of a callback of a handler of a kind
// (the kind is empty for operator-wide handlers and the client).
func CallbackPanicked(kind, callback, handler string) {
	callbackPanics.WithLabelValues(kind, callback, handler).Inc()
}
