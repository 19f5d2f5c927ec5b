package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// apiVersion is the version of kubebuilder's external plugin protocol that
// this plugin speaks.
const apiVersion = "v1alpha1"

// request is what kubebuilder writes to the plugin's stdin (its
// PluginRequest).
type request struct {
	APIVersion string   `json:"apiVersion"`
	Args       []string `json:"args"`
	// Command is init, create api, create webhook, edit, or the helpers
	// flags and metadata.
	Command string `json:"command"`
	// Universe is the project's files (every file under the project
	// directory, binaries included) by relative path.
	Universe    map[string]string `json:"universe"`
	PluginChain []string          `json:"pluginChain,omitempty"`
	// Config is PROJECT, read-only: kubebuilder saves its own copy after
	// the plugins ran.
	Config map[string]any `json:"config,omitempty"`
}

// response is what the plugin writes to stdout (kubebuilder's
// PluginResponse); kubebuilder writes every file of Universe.
type response struct {
	APIVersion string            `json:"apiVersion"`
	Command    string            `json:"command"`
	Metadata   metadata          `json:"metadata"`
	Universe   map[string]string `json:"universe"`
	Error      bool              `json:"error,omitempty"`
	ErrorMsgs  []string          `json:"errorMsgs,omitempty"`
	Flags      []flag            `json:"flags,omitempty"`
}

// metadata is the help text of a subcommand. Kubebuilder's type has no
// JSON tags, hence the capitalised keys.
type metadata struct {
	Description string `json:"Description"`
	Examples    string `json:"Examples"`
}

// flag declares a flag of a subcommand; Type is bool or string here.
// Kubebuilder's type has no JSON tags either.
type flag struct {
	Name    string `json:"Name"`
	Type    string `json:"Type"`
	Default string `json:"Default"`
	Usage   string `json:"Usage"`
}

// readRequest decodes the request as a stream: the universe holds every
// file of the project and can be large.
func readRequest(r io.Reader) (request, error) {
	var req request
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		return req, fmt.Errorf("read the plugin request from stdin: %w", err)
	}
	return req, nil
}

// failure is the response that reports errors to kubebuilder, which
// shows the messages and fails the command.
func failure(command string, errs ...error) response {
	resp := response{APIVersion: apiVersion, Command: command, Universe: map[string]string{}, Error: true}
	for _, err := range errs {
		resp.ErrorMsgs = append(resp.ErrorMsgs, "kopf.kopf.dev: "+err.Error())
	}
	return resp
}
