package admission

import (
	"strings"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/fields"
)

// Hint narrows the handlers of a review: the webhook server knows the
// handler id from the URL path; the type is known where the server is
// mounted per type. Empty fields select everything, as in Kopf when the
// server gives no hint.
type Hint struct {
	Type Type
	ID   string
}

// Select returns the kind's handlers that serve the request, in
// registration order: those of the hinted type and id, whose subresource
// and filters match. Mutating handlers do not see deletions unless they are
// for DELETE only. Operations are not checked here: they go into the
// webhook configuration's rules, as in Kopf. A handler whose filters
// panic does not serve the request; panicked hears of it.
func (k *Kind) Select(hint Hint, obj registry.Object, r *Request, panicked func(*Handler, *contain.Panic)) []*Handler {
	var out []*Handler
	for _, h := range k.Handlers {
		if hint.Type != "" && h.Type != hint.Type || hint.ID != "" && h.ID != hint.ID {
			continue
		}
		if h.Type == Mutating && r.Operation == Delete && !h.onlyDeletion() {
			continue
		}
		if h.Subresource != AnySubresource && h.Subresource != r.Subresource {
			continue
		}
		matched, p := contain.Value(func() bool { return h.matches(obj, r) })
		if p != nil {
			panicked(h, p)
			continue
		}
		if matched {
			out = append(out, h)
		}
	}
	return out
}

// matches applies the filters to the request's body, the callbacks last.
func (h *Handler) matches(obj registry.Object, r *Request) bool {
	if !registry.MatchMeta(h.Labels, metaOf(r.Body, "labels")) || !registry.MatchMeta(h.Annotations, metaOf(r.Body, "annotations")) {
		return false
	}
	if len(h.Field) > 0 {
		v, present := fields.Resolve(r.Body, h.Field)
		if h.Value.IsSet() && !h.Value.Match(v, present) || !h.Value.IsSet() && !present {
			return false
		}
	}
	if h.When != nil && !h.When(obj, causeOf(r, h.ID)) {
		return false
	}
	return h.WhenRequest == nil || h.WhenRequest(obj, forHandler(r, h))
}

// causeOf presents the request to filters written for change handlers: the
// body, old/new and diff, and the operation as a reason where one fits.
func causeOf(r *Request, id string) *causes.Cause {
	c := &causes.Cause{HandlerID: id, Body: r.Body, Old: orNil(r.Old), New: orNil(r.New), Diff: r.Diff, Patch: r.Patch}
	switch r.Operation {
	case Create:
		c.Reason = causes.Create
	case Update:
		c.Reason = causes.Update
	case Delete:
		c.Reason = causes.Delete
	}
	return c
}

// metaOf returns metadata.<name> of a body as strings.
func metaOf(body map[string]any, name string) map[string]string {
	raw, _ := fields.Resolve(body, fields.Path{"metadata", name})
	m, _ := raw.(map[string]any)
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// idFromPath returns the handler id from a request path under the prefix:
// "/prefix/some/id" gives "some/id"; the prefix itself gives "".
func idFromPath(path, prefix string) (string, bool) {
	prefix = strings.TrimRight(prefix, "/")
	if path == prefix {
		return "", true
	}
	if rest, ok := strings.CutPrefix(path, prefix+"/"); ok {
		return rest, true
	}
	return "", false
}
