package posting

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
// (see LevelOf), which is what Kopf's documentation promises.
type Settings struct {
	// Disabled stops all Events from handlers and from log lines (Kopf:
	// settings.posting.enabled = False). The engine's own Post calls are
	// not gated by it; see Poster.Allows.
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

// LevelOf is the level of an Event type: Debug, Normal (and any type
// Kubernetes does not know, such as a custom "SomeType"), Warning, and
// Error or Fatal.
func LevelOf(eventType string) Level {
	switch eventType {
	case TypeDebug:
		return LevelDebug
	case TypeWarning:
		return LevelWarning
	case TypeError, TypeFatal:
		return LevelError
	default:
		return LevelInfo
	}
}

// TypeOf is the Event type of a level, as Kopf maps log levels to types.
func TypeOf(level Level) string {
	switch {
	case level <= LevelDebug:
		return TypeDebug
	case level == LevelInfo:
		return TypeNormal
	case level == LevelWarning:
		return TypeWarning
	default:
		return TypeError
	}
}

// Allows tells whether the poster's settings let an Event of the type be
// posted. The engine asks it before its own Post calls.
func (p *Poster) Allows(eventType string) bool {
	return p.Settings.Allows(LevelOf(eventType))
}
