package requests

import "testing"

func TestKey(t *testing.T) {
	for _, tt := range []struct {
		method, path, watch, want string
	}{
		{"GET", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples", "", "list kopfexamples"},
		{"GET", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples", "true", "watch kopfexamples"},
		{"GET", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1", "", "get kopfexamples"},
		{"PATCH", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1", "", "patch kopfexamples"},
		{"PATCH", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1/status", "", "patch kopfexamples/status"},
		{"PUT", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1", "", "update kopfexamples"},
		{"POST", "/api/v1/namespaces/ns/events", "", "create events"},
		{"DELETE", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1", "", "delete kopfexamples"},
		{"DELETE", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples", "", "deletecollection kopfexamples"},
		{"GET", "/api/v1/namespaces", "", "list namespaces"},
		{"GET", "/api/v1/namespaces/ns", "", "get namespaces"},
		{"GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x", "", "get customresourcedefinitions"},
		{"GET", "/apis/kopf.dev/v1", "", "get /apis/kopf.dev/v1"},
		{"GET", "/api", "", "get /api"},
	} {
		if got := Key(tt.method, tt.path, tt.watch); got != tt.want {
			t.Errorf("Key(%s %s watch=%q) = %q, want %q", tt.method, tt.path, tt.watch, got, tt.want)
		}
	}
	if !IsWrite("patch kopfexamples/status") || IsWrite("watch kopfexamples") {
		t.Error("IsWrite tells writes from reads wrongly")
	}
}
