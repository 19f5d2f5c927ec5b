package posting

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	exampleGVK = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}
	exampleRef = Ref{GVK: exampleGVK, Namespace: "ns1", Name: "name1", UID: "uid1"}
	fixedNow   = time.Date(2026, 1, 2, 3, 4, 5, 678000000, time.UTC)
)

// TestWireNames pins what users and Kopf's tooling see in Events.
func TestWireNames(t *testing.T) {
	got := []string{DefaultReportingComponent, DefaultReportingInstance, DefaultNamePrefix, DefaultNamespace, Action,
		TypeDebug, TypeNormal, TypeWarning, TypeError, TypeFatal, ReasonLogging, DefaultErrorReason, LocalKey}
	want := []string{"kopf", "dev", "kopf-event-", "default", "Action?",
		"Debug", "Normal", "Warning", "Error", "Fatal", "Logging", "Error", "k8s_skip"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wire names -want +got:\n%s", diff)
	}
	if MaxMessageLength != 1024 {
		t.Errorf("MaxMessageLength = %d, want 1024", MaxMessageLength)
	}
}

func TestShorten(t *testing.T) {
	ascii := strings.Repeat("b", 600) + strings.Repeat("c", 600)
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "hello", "hello"},
		{"exactly the maximum", strings.Repeat("a", 1024), strings.Repeat("a", 1024)},
		// Kopf: message[:511] + '...' + message[-510:].
		{"one byte over", strings.Repeat("a", 1025), strings.Repeat("a", 511) + "..." + strings.Repeat("a", 510)},
		{"both ends kept", ascii, ascii[:511] + "..." + ascii[len(ascii)-510:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Shorten(tt.in)); diff != "" {
				t.Errorf("Shorten() -want +got:\n%s", diff)
			}
		})
	}
}

// TestShortenMultiByte: the API server counts bytes, so the cut does too,
// without splitting a character.
func TestShortenMultiByte(t *testing.T) {
	for _, in := range []string{
		strings.Repeat("é", 600),                          // 1200 bytes, 600 characters: Kopf would not cut it
		strings.Repeat("€", 400) + strings.Repeat("x", 5), // 3-byte characters
		"x" + strings.Repeat("😀", 300),                    // 4-byte characters, shifted
	} {
		got := Shorten(in)
		if !utf8.ValidString(got) || len(got) > MaxMessageLength || len(got) < MaxMessageLength-6 {
			t.Errorf("Shorten() gave %d bytes (valid UTF-8: %v), want a valid cut of at most %d", len(got), utf8.ValidString(got), MaxMessageLength)
		}
		head, tail, ok := strings.Cut(got, "...")
		if !ok || !strings.HasPrefix(in, head) || !strings.HasSuffix(in, tail) {
			t.Errorf("Shorten() = %q..., want both ends of the message", got[:20])
		}
	}
}

func TestBuild(t *testing.T) {
	now := metav1.NewTime(fixedNow)
	event := func(namespace string, involved corev1.ObjectReference) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:          metav1.ObjectMeta{GenerateName: "kopf-event-", Namespace: namespace},
			InvolvedObject:      involved,
			Type:                "Normal",
			Reason:              "Reason1",
			Message:             "message1",
			Action:              "Action?",
			Source:              corev1.EventSource{Component: "kopf"},
			ReportingController: "kopf",
			ReportingInstance:   "dev",
			FirstTimestamp:      now,
			LastTimestamp:       now,
			EventTime:           metav1.NewMicroTime(fixedNow),
			Count:               1,
		}
	}
	cluster := Ref{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "ns9", UID: "uid9"}
	tests := []struct {
		name   string
		poster *Poster
		ref    Ref
		want   *corev1.Event
	}{
		{"namespaced", &Poster{}, exampleRef, event("ns1", corev1.ObjectReference{
			APIVersion: "kopf.dev/v1", Kind: "KopfExample", Name: "name1", UID: "uid1", Namespace: "ns1"})},
		{"cluster-scoped", &Poster{}, cluster, event("default", corev1.ObjectReference{
			APIVersion: "v1", Kind: "Namespace", Name: "ns9", UID: "uid9"})},
		{"cluster-scoped in kube-system", &Poster{DefaultNamespace: "kube-system"}, cluster, event("kube-system", corev1.ObjectReference{
			APIVersion: "v1", Kind: "Namespace", Name: "ns9", UID: "uid9"})},
		// The API server wants the involved namespace elsewhere; Kopf always sets it.
		{"cluster-scoped in another namespace", &Poster{DefaultNamespace: "operators"}, cluster, event("operators", corev1.ObjectReference{
			APIVersion: "v1", Kind: "Namespace", Name: "ns9", UID: "uid9", Namespace: "operators"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.poster.Now = func() time.Time { return fixedNow }
			got := tt.poster.build(tt.ref, "Normal", "Reason1", "message1")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("build() -want +got:\n%s", diff)
			}
		})
	}
}

func TestBuildCustomNames(t *testing.T) {
	p := &Poster{ReportingComponent: "my-operator", ReportingInstance: "pod-1", NamePrefix: "mine-"}
	got := p.build(exampleRef, "Normal", "R", strings.Repeat("m", 2000))
	if got.GenerateName != "mine-" || got.Source.Component != "my-operator" || got.ReportingController != "my-operator" ||
		got.ReportingInstance != "pod-1" || len(got.Message) != MaxMessageLength {
		t.Errorf("build() = %+v, want the custom names and a cut message", got)
	}
}

// The reporting component and instance come from the settings (Kopf's
// settings.posting.reporting_component and reporting_instance).
func TestBuildReportingFromSettings(t *testing.T) {
	p := &Poster{Settings: Settings{ReportingComponent: "my-operator", ReportingInstance: "replica-1"}}
	got := p.build(exampleRef, "Normal", "R", "m")
	if got.Source.Component != "my-operator" || got.ReportingController != "my-operator" || got.ReportingInstance != "replica-1" {
		t.Errorf("build() = %+v, want the settings' component and instance", got)
	}
}

func TestPost(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	p := &Poster{Client: c, Now: func() time.Time { return fixedNow }}
	ctx := context.Background()
	if err := p.Post(ctx, exampleRef, TypeWarning, "Reason1", "message1"); err != nil {
		t.Fatal(err)
	}
	eventRef := Ref{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Event"}, Namespace: "ns1", Name: "e1"}
	if err := p.Post(ctx, eventRef, TypeWarning, "Reason2", "about an event"); err != nil {
		t.Fatal(err)
	}
	got := listEvents(t, c)
	if len(got) != 1 || got[0].Reason != "Reason1" || got[0].Type != TypeWarning || !strings.HasPrefix(got[0].Name, "kopf-event-") {
		t.Errorf("events = %+v, want only the one about the example", got)
	}
	if err := (&Poster{}).Post(ctx, exampleRef, TypeNormal, "R", "m"); err == nil {
		t.Errorf("Post() without a client succeeded")
	}
}

func listEvents(t *testing.T, c client.Client) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}
