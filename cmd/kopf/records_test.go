package main

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTargets(t *testing.T) {
	tests := []struct {
		name string
		o    options
		want []string
	}{
		{"no namespace: the cluster-wide object", options{peering: "p"}, []string{"ClusterKopfPeering p"}},
		{"-A", options{peering: "p", clusterwide: true}, []string{"ClusterKopfPeering p"}},
		{"each namespace's object", options{peering: "p", namespaces: []string{"a", "b"}},
			[]string{"KopfPeering a/p", "KopfPeering b/p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tg := range targets(tt.o) {
				got = append(got, describe(tg))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("targets() -want +got:\n%s", diff)
			}
		})
	}
}

// lister is a discovery client that serves fixed resource lists.
type lister struct {
	lists map[string][]string
	err   error
}

func (l lister) ServerResourcesForGroupVersionWithContext(_ context.Context, gv string) (*metav1.APIResourceList, error) {
	if l.err != nil {
		return nil, l.err
	}
	names, ok := l.lists[gv]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	list := &metav1.APIResourceList{GroupVersion: gv}
	for _, n := range names {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: n})
	}
	return list, nil
}

// TestMissingKind: without the peering CRDs, the command says which CRD
// is missing, not that the object is.
func TestMissingKind(t *testing.T) {
	tests := []struct {
		name       string
		disco      lister
		o          options
		wantStderr string
	}{{
		name:       "no kopf.dev/v1 at all",
		disco:      lister{},
		o:          options{command: "freeze", peering: "p", lifetime: 60, namespaces: []string{"ns"}},
		wantStderr: "kopf freeze: the cluster has no KopfPeering kind (the CRD kopfpeerings.kopf.dev is missing): apply config/crd/kopfpeerings.yaml first\n",
	}, {
		name:       "only the namespaced kind",
		disco:      lister{lists: map[string][]string{"kopf.dev/v1": {"kopfpeerings", "kopfexamples"}}},
		o:          options{command: "resume", peering: "p", clusterwide: true},
		wantStderr: "kopf resume: the cluster has no ClusterKopfPeering kind (the CRD clusterkopfpeerings.kopf.dev is missing): apply config/crd/clusterkopfpeerings.yaml first\n",
	}, {
		name:       "no answer",
		disco:      lister{err: errors.New("connection refused")},
		o:          options{command: "resume", peering: "p"},
		wantStderr: "kopf resume: look up the ClusterKopfPeering kind in the cluster: connection refused\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			w := writer{disco: tt.disco, stdout: &stdout, stderr: &stderr} // no dynamic client: it must not be used
			if code := w.apply(context.Background(), tt.o, "me", time.Now()); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if diff := cmp.Diff(tt.wantStderr, stderr.String()); diff != "" {
				t.Errorf("stderr -want +got:\n%s", diff)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}
