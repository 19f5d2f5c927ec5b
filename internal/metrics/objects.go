package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	objectsRetrying = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: ObjectsRetrying,
		Help: "Objects whose handlers wait for a retry after a failure (as far as this process has seen them since it started).",
	}, []string{LabelKind})
	objectsFailed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: ObjectsFailed,
		Help: "Objects whose latest cause has a handler that failed for good (as far as this process has seen them since it started).",
	}, []string{LabelKind})
)

// Objects returns the gauges of a kind's objects that wait for a retry and
// that failed for good. Their series exist from then on, at zero, so that
// alerts need not handle absent series.
func Objects(kind string) (retrying, failed prometheus.Gauge) {
	return objectsRetrying.WithLabelValues(kind), objectsFailed.WithLabelValues(kind)
}
