package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	daemonsRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: DaemonsRunning,
		Help: "Daemons and timers running (one per object and handler), including those asked to stop that have not exited yet.",
	}, []string{LabelKind, LabelHandler})
	daemonsStopping = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: DaemonsStopping,
		Help: "Daemons and timers asked to stop that have not exited yet (including abandoned ones).",
	}, []string{LabelKind, LabelHandler})
	daemonStops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: DaemonStops,
		Help: "Daemons and timers that exited, by the reason of their stop: Kopf's stop reasons joined with |, or DONE for those that ended on their own.",
	}, []string{LabelKind, LabelHandler, LabelReason})
)

// DaemonSpawned counts a daemon or timer that starts for an object.
func DaemonSpawned(kind, handler string) { daemonsRunning.WithLabelValues(kind, handler).Inc() }

// DaemonStopping counts a daemon or timer that is asked to stop, once.
func DaemonStopping(kind, handler string) { daemonsStopping.WithLabelValues(kind, handler).Inc() }

// DaemonExited counts a daemon or timer whose goroutine returned, with the
// reason of its stop; stopping says it had been asked to stop (and was
// counted as stopping).
func DaemonExited(kind, handler, reason string, stopping bool) {
	daemonsRunning.WithLabelValues(kind, handler).Dec()
	if stopping {
		daemonsStopping.WithLabelValues(kind, handler).Dec()
	}
	daemonStops.WithLabelValues(kind, handler, reason).Inc()
}
