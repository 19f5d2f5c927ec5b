package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	shardMembers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: ShardMembers,
		Help: "Live members of the ring, as the ring's assigner sees them; reported by the replica that is the assigner, 0 on the others.",
	}, []string{LabelRing})
	shardObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: ShardObjects,
		Help: "Objects of the kind in this replica's share of the ring: those its cache holds.",
	}, []string{LabelRing, LabelKind})
)

// ShardMembersLive sets the number of live members of a ring, as the assigner
// sees them.
func ShardMembersLive(ring string, n int) { shardMembers.WithLabelValues(ring).Set(float64(n)) }

// ShardObjectsOf is the gauge of a kind's objects in this replica's share.
func ShardObjectsOf(ring, kind string) prometheus.Gauge {
	return shardObjects.WithLabelValues(ring, kind)
}

// ForgetShard removes a ring's series when the replica stops: another
// operator of the process (as in tests) starts from none.
func ForgetShard(ring string) {
	shardMembers.DeleteLabelValues(ring)
	shardObjects.DeletePartialMatch(prometheus.Labels{LabelRing: ring})
}
