package integration

import (
	"context"
	"slices"
	"testing"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// handled runs an operator with a create and a delete handler until the
// example object is created and handled (finalizer and diffbase on it),
// then stops that operator: the state a restart finds.
func handled(t *testing.T, ns string) {
	t.Helper()
	reg, kind := kex()
	handlers.OnCreate(kind, "create_fn", nothing)
	handlers.OnDelete(kind, "delete_fn", nothing)
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	eventually(t, "the first operator handles the creation", func() bool {
		return op.Logs.Count("Creation is processed: 1 succeeded; 0 failed.") == 1
	})
	op.Stop(t)
}

// restarted is the operator after the restart, with resume, create, update
// and delete handlers (and a resume handler for deleted objects).
func restarted(t *testing.T, ns string, seen *calls) {
	t.Helper()
	reg, kind := kex()
	handlers.OnResume(kind, "resume_fn", seen.record)
	handlers.OnResume(kind, "resume_deleted_fn", seen.record, handlers.Deleted())
	handlers.OnCreate(kind, "create_fn", seen.record)
	handlers.OnUpdate(kind, "update_fn", seen.record)
	handlers.OnDelete(kind, "delete_fn", seen.record)
	env.StartOperator(t, ns, reg, handlers.Options{})
}

// Kopf's acceptance item 10: after a restart, resume handlers run once
// with reason resume, create does not, the diffbase stays; a later change
// runs only the update.
func TestResumeOnRestart(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	handled(t, ns)
	diffbase := get(t, ns, "kopf-example-1").GetAnnotations()["kopf.zalando.org/last-handled-configuration"]

	var seen calls
	restarted(t, ns, &seen)
	eventually(t, "resuming is handled", func() bool { return len(seen.of("resume_fn")) == 1 && len(seen.of("resume_deleted_fn")) == 1 })
	for _, c := range append(seen.of("resume_fn"), seen.of("resume_deleted_fn")...) {
		if c.Reason != cause.Resume {
			t.Errorf("%s ran with reason %s, want resume", c.ID, c.Reason)
		}
	}
	if got := get(t, ns, "kopf-example-1").GetAnnotations()["kopf.zalando.org/last-handled-configuration"]; got != diffbase {
		t.Errorf("the diffbase changed on resume:\n%s\n%s", diffbase, got)
	}

	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
	eventually(t, "the update runs", func() bool { return len(seen.of("update_fn")) == 1 })
	if n := len(seen.of("resume_fn")); n != 1 {
		t.Errorf("resume_fn ran %d times, want 1 (never again after the first full handling)", n)
	}
	if n := len(seen.of("create_fn")); n != 0 {
		t.Errorf("create_fn ran %d times after the restart, want 0", n)
	}
}

// Kopf's acceptance item 11a: a change made while the operator was down is
// an update at startup, and resume handlers join it with reason update.
func TestResumeMixedIntoUpdate(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	handled(t, ns)
	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed-while-down"}}`, false)

	var seen calls
	restarted(t, ns, &seen)
	eventually(t, "the update and resume run", func() bool { return len(seen.of("update_fn")) == 1 && len(seen.of("resume_fn")) == 1 })
	order := []string{}
	for _, c := range seen.all() {
		order = append(order, c.ID)
		if c.Reason != cause.Update {
			t.Errorf("%s ran with reason %s, want update", c.ID, c.Reason)
		}
	}
	if want := []string{"resume_fn", "resume_deleted_fn", "update_fn"}; !slices.Equal(order, want) {
		t.Errorf("handlers ran in order %v, want registration order %v", order, want)
	}
}

// Kopf's acceptance item 11b (and the change that started this project's
// resume semantics): an object already being deleted at startup gets its
// delete handlers and resume handlers marked Deleted, not plain resumes.
func TestResumeSkippedOnDeletion(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	handled(t, ns)
	if err := env.Client.Delete(context.Background(), exampleObject(t, ns)); err != nil {
		t.Fatal(err)
	}

	var seen calls
	restarted(t, ns, &seen)
	eventually(t, "the object is gone", func() bool { return gone(t, ns, "kopf-example-1") })
	if n := len(seen.of("delete_fn")); n != 1 {
		t.Errorf("delete_fn ran %d times, want 1", n)
	}
	if n := len(seen.of("resume_deleted_fn")); n != 1 {
		t.Errorf("resume_deleted_fn ran %d times, want 1", n)
	}
	if n := len(seen.of("resume_fn")); n != 0 {
		t.Errorf("resume_fn ran %d times on a deleted object, want 0", n)
	}
	for _, c := range seen.all() {
		if c.Reason != cause.Delete {
			t.Errorf("%s ran with reason %s, want delete", c.ID, c.Reason)
		}
	}
}

// Kopf's acceptance item 11c: an object created while the operator was
// down is a creation; resume handlers do not join it.
func TestCreatedWhileDownIsCreateOnly(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	create(t, exampleObject(t, ns))

	var seen calls
	restarted(t, ns, &seen)
	eventually(t, "the creation runs", func() bool { return len(seen.of("create_fn")) == 1 })
	eventually(t, "the diffbase is stored", func() bool {
		return get(t, ns, "kopf-example-1").GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != ""
	})
	if n := len(seen.of("resume_fn")) + len(seen.of("resume_deleted_fn")); n != 0 {
		t.Errorf("resume handlers ran %d times on a creation, want 0", n)
	}
}
