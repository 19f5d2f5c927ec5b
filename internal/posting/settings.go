package posting

import "github.com/kopf-go/kopf/pkg/events"

// Level orders Events and log lines by severity (the public
// events.Level).
type Level = events.Level

// Levels, lowest first.
const (
	LevelDebug   = events.LevelDebug
	LevelInfo    = events.LevelInfo
	LevelWarning = events.LevelWarning
	LevelError   = events.LevelError
)

// Settings are the gates of Kopf's settings.posting (the public
// events.Settings).
type Settings = events.Settings

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
