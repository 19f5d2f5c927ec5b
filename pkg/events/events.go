// Package events holds the settings of the Kubernetes Events that an
// operator posts (Kopf's settings.posting): whether Events are posted at
// all, from which level on, whether handlers' log lines become Events
// too, and who posts them; and LocalKey, which keeps a log line out of
// them. handlers.Options.Posting takes the Settings; handlers.PostEvent
// and its kin post the Events.
package events

// Level orders Events and log lines by severity, as Python's logging levels
// order Kopf's. The zero value is LevelInfo, Kopf's default threshold.
type Level int

// Levels, lowest first.
const (
	LevelDebug   Level = -1
	LevelInfo    Level = 0
	LevelWarning Level = 1
	LevelError   Level = 2
)

// Settings are the gates of Kopf's settings.posting. The zero value is
// Kopf's defaults: posting enabled, level Info, log lines not posted.
//
// Unlike Kopf, whose kopf.warn ignores `enabled` and whose kopf.event
// ignores `level`, the gates apply the same way to everything queued:
// Disabled stops all of it, and Level applies to every Event by its type
// (Debug; Normal and any custom type; Warning; Error), which is what Kopf's documentation promises.
type Settings struct {
	// Disabled stops all Events from handlers and from log lines (Kopf:
	// settings.posting.enabled = False). The engine's own Events are not
	// gated by it.
	Disabled bool
	// Level is the lowest level posted (Kopf: settings.posting.level,
	// logging.INFO by default).
	Level Level
	// Loggers posts handler log lines as Events with reason "Logging"
	// (Kopf: settings.posting.loggers, False since Kopf 1.44).
	Loggers bool
	// ReportingComponent and ReportingInstance say who posts the Events
	// (Kopf: settings.posting.reporting_component, default "kopf", and
	// reporting_instance, default "dev"); a Poster's own fields win.
	ReportingComponent string
	ReportingInstance  string
}

// Allows tells whether an Event of the level passes the gates.
func (s Settings) Allows(level Level) bool {
	return !s.Disabled && level >= s.Level
}

// LocalKey, as a key with the value true in a log line or in WithValues,
// keeps the line out of Events when Settings.Loggers is on (Kopf's
// k8s_skip).
const LocalKey = "k8s_skip"
