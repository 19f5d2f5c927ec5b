package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/kopf-go/kopf/cmd/kubebuilder-kopf/internal/scaffold"
)

// handle answers one request. Errors become an error response; notes for
// the user are returned apart, for stderr.
func handle(req request, now time.Time) (response, []string) {
	if req.APIVersion != apiVersion {
		return failure(req.Command, fmt.Errorf("unsupported plugin API version %q: this plugin speaks %s", req.APIVersion, apiVersion)), nil
	}
	switch req.Command {
	case "metadata":
		return describe(req)
	case "flags":
		return declareFlags(req)
	case "init", "edit", "create api", "create webhook":
		return scaffoldFor(req, now)
	}
	return failure(req.Command, fmt.Errorf("unknown command %q: want init, create api, create webhook, edit, flags or metadata", req.Command)), nil
}

// subcommandArg is the subcommand that the flags and metadata helpers ask
// about: their only argument, --init, --api, --webhook or --edit.
func subcommandArg(req request) (string, error) {
	if len(req.Args) == 1 && len(req.Args[0]) > 2 && req.Args[0][:2] == "--" {
		if _, ok := subcommandFlags(req.Args[0][2:]); ok {
			return req.Args[0][2:], nil
		}
	}
	return "", fmt.Errorf("%s: want one of --init, --api, --webhook, --edit as the argument, got %q", req.Command, req.Args)
}

func describe(req request) (response, []string) {
	sub, err := subcommandArg(req)
	if err != nil {
		return failure(req.Command, err), nil
	}
	return response{APIVersion: apiVersion, Command: req.Command, Metadata: help[sub], Universe: map[string]string{}}, nil
}

func declareFlags(req request) (response, []string) {
	sub, err := subcommandArg(req)
	if err != nil {
		return failure(req.Command, err), nil
	}
	flags, _ := subcommandFlags(sub)
	return response{APIVersion: apiVersion, Command: req.Command, Universe: map[string]string{}, Flags: flags}, nil
}

// subcommandOf names the subcommands of the scaffolding commands as the
// helpers do.
var subcommandOf = map[string]string{"init": "init", "edit": "edit", "create api": "api", "create webhook": "webhook"}

// scaffoldFor runs a scaffolding command. The response carries only the
// files the plugin writes or changes: kubebuilder rewrites every file of
// the response's universe, and the request's universe has passed through
// JSON strings, which do not carry binaries (bin/) intact.
func scaffoldFor(req request, now time.Time) (response, []string) {
	known, _ := subcommandFlags(subcommandOf[req.Command])
	if req.Command == "create api" || req.Command == "create webhook" {
		known = append(known, resourceFlags...)
	}
	v, err := parseArgs(req.Args, known)
	if err != nil {
		return failure(req.Command, err), nil
	}
	project, err := scaffold.ParseProject(req.Config)
	if err != nil {
		return failure(req.Command, err), nil
	}
	in := scaffold.Input{Universe: req.Universe, Project: project, Year: now.Year()}
	var result scaffold.Result
	switch req.Command {
	case "init", "edit":
		result, err = scaffold.Init(in, scaffold.InitOptions{KopfVersion: v["kopf-version"], KopfReplace: v["kopf-replace"]})
	case "create api":
		result, err = scaffold.API(in, scaffold.APIOptions{
			Group: v["group"], Version: v["version"], Kind: v["kind"],
			Daemon: v.bool("daemon"), Timer: v.bool("timer"), Force: v.bool("force"),
		})
	case "create webhook":
		result, err = scaffold.Webhook(in, scaffold.WebhookOptions{
			Group: v["group"], Version: v["version"], Kind: v["kind"],
			Validating: v.bool("validating"), Mutating: v.bool("mutating"), Force: v.bool("force"),
		})
	default:
		err = errors.New("no scaffold for this command") // unreachable: handle checks
	}
	if err != nil {
		return failure(req.Command, err), nil
	}
	files := result.Files
	if files == nil {
		files = map[string]string{}
	}
	notes := result.Notes
	if _, changed := files["go.mod"]; changed && req.Command == "edit" {
		// init's go/v4 runs `go mod tidy` afterwards; edit's does not.
		notes = append(notes, "go.mod requires kopf-go now: run `go mod tidy`")
	}
	return response{APIVersion: apiVersion, Command: req.Command, Universe: files}, notes
}
