package peering

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kopfv1 "github.com/kopf-go/kopf/pkg/apis/kopf/v1"
)

// peeringObject decodes a peering object as the informer delivers it.
func peeringObject(t *testing.T, body string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(body)); err != nil {
		t.Fatalf("decode the peering object: %v", err)
	}
	return u
}

func TestRecords(t *testing.T) {
	const head = `{"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "default"}`
	kopfRecord := &kopfv1.Peer{Priority: 100, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59.123456+00:00"}
	tests := []struct {
		name    string
		body    string
		want    map[string]*kopfv1.Peer
		wantErr bool
	}{
		{
			name: "no status",
			body: head + `}`,
			want: nil,
		},
		{
			name: "a null status",
			body: head + `, "status": null}`,
			want: nil,
		},
		{
			name: "an empty status",
			body: head + `, "status": {}}`,
			want: map[string]*kopfv1.Peer{},
		},
		{
			name: "Kopf's records",
			body: head + `, "status": {
				"kopf-pod-1": {"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00"},
				"dev@laptop": {"priority": 666, "lifetime": 3600, "lastseen": "2020-12-31T23:59:59.123456+00:00", "message": "debugging"}}}`,
			want: map[string]*kopfv1.Peer{
				"kopf-pod-1": kopfRecord,
				"dev@laptop": {Priority: 666, Lifetime: intp(3600), LastSeen: "2020-12-31T23:59:59.123456+00:00", Message: "debugging"},
			},
		},
		{
			name: "unknown fields are tolerated",
			body: head + `, "status": {
				"kopf-pod-1": {"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00", "namespace": "ns", "extra": {"a": [1]}}}}`,
			want: map[string]*kopfv1.Peer{"kopf-pod-1": kopfRecord},
		},
		{
			name: "a null record stays nil",
			body: head + `, "status": {"gone": null, "kopf-pod-1": {"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00"}}}`,
			want: map[string]*kopfv1.Peer{"gone": nil, "kopf-pod-1": kopfRecord},
		},
		{
			name: "one malformed record still yields the good ones",
			body: head + `, "status": {
				"bad": {"priority": "high"},
				"kopf-pod-1": {"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00"}}}`,
			want:    map[string]*kopfv1.Peer{"kopf-pod-1": kopfRecord},
			wantErr: true,
		},
		{
			name: "a record that is not an object is skipped",
			body: head + `, "status": {
				"bad": "garbage",
				"kopf-pod-1": {"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00"}}}`,
			want:    map[string]*kopfv1.Peer{"kopf-pod-1": kopfRecord},
			wantErr: true,
		},
		{
			// A null next to a malformed record must not turn into a live
			// empty record (priority 0, just seen).
			name: "a null record stays nil next to a malformed one",
			body: head + `, "status": {
				"bad": {"lifetime": "long"},
				"gone": null,
				"kopf-pod-1": {"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00"}}}`,
			want:    map[string]*kopfv1.Peer{"gone": nil, "kopf-pod-1": kopfRecord},
			wantErr: true,
		},
		{
			name:    "a status that is not an object",
			body:    head + `, "status": "garbage"}`,
			want:    nil,
			wantErr: true,
		},
		{
			name:    "a status that is a list",
			body:    head + `, "status": [{"priority": 100}]}`,
			want:    nil,
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := records(peeringObject(t, tt.body))
			if (err != nil) != tt.wantErr {
				t.Errorf("records() error = %v, want an error: %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("records() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
