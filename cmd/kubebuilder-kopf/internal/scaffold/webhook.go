package scaffold

import (
	"errors"
	"fmt"
	"path"
)

// WebhookOptions say which kind gets admission handlers, and which.
type WebhookOptions struct {
	Group, Version, Kind string
	// Validating and Mutating choose the handlers.
	Validating, Mutating bool
	// Force overwrites the kind's webhook file.
	Force bool
}

// Webhook scaffolds internal/kopf/<kind>_webhooks.go: a validating and a
// mutating handler of one kind, served by the manager's webhook server.
func Webhook(in Input, o WebhookOptions) (Result, error) {
	var r Result
	if _, ok := in.Universe[setupFile]; !ok {
		return r, errNotInitialised
	}
	if !o.Validating && !o.Mutating {
		return r, errors.New("--validating=false and --mutating=false leave nothing to scaffold")
	}
	k, err := resolveKind(in.Project, in.Universe, o.Group, o.Version, o.Kind)
	if err != nil {
		return r, err
	}
	data := newKindData(k, boilerplate(in.Universe, in.Year))
	data.Validating, data.Mutating = o.Validating, o.Mutating

	file := path.Join("internal/kopf", data.Lower+"_webhooks.go")
	if _, exists := in.Universe[file]; exists && !o.Force {
		return r, fmt.Errorf("%s exists already (use --force to overwrite it)", file)
	}
	content, err := render("webhooks.go.tmpl", data)
	if err != nil {
		return r, err
	}
	r.write(file, content)
	r.note("the webhooks are served at /kopf/<handler id>: point a webhook configuration there, or have the operator keep one (webhookOptions in %s)", setupFile)
	return r, nil
}
