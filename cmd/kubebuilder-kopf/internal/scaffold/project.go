// Package scaffold writes kopf-go into a kubebuilder project: what `init`
// adds once (the dependency, the wiring in cmd/main.go, internal/kopf's
// shared setup, a test recipe, the peering CRDs) and what each `create
// api` and `create webhook` adds for one kind. It is pure: it reads the
// project's files and PROJECT, and returns the files to write.
package scaffold

import (
	"encoding/json"
	"fmt"
)

// Project is what the scaffolds need of the PROJECT file, which
// kubebuilder sends as a map.
type Project struct {
	Repo       string     `json:"repo"`
	Domain     string     `json:"domain"`
	MultiGroup bool       `json:"multigroup"`
	Namespaced bool       `json:"namespaced"`
	Resources  []Resource `json:"resources"`
}

// Resource is one entry of PROJECT's resources.
type Resource struct {
	Group   string `json:"group"`
	Domain  string `json:"domain"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Plural  string `json:"plural"`
	// Path is the Go package of the kind's type.
	Path string `json:"path"`
	// API is present when the project defines the kind's type.
	API *struct {
		Namespaced bool `json:"namespaced"`
	} `json:"api"`
	Core     bool `json:"core"`
	External bool `json:"external"`
}

// ParseProject reads the PROJECT map of a plugin request.
func ParseProject(config map[string]any) (Project, error) {
	var p Project
	if config == nil {
		return p, fmt.Errorf("the request has no PROJECT configuration (kubebuilder v4.10 or later sends it)")
	}
	// The map came from YAML through JSON; a round trip types it.
	data, err := json.Marshal(config)
	if err != nil {
		return p, fmt.Errorf("read PROJECT: %w", err)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("read PROJECT: %w", err)
	}
	if p.Repo == "" {
		return p, fmt.Errorf("PROJECT has no repo (the Go module path)")
	}
	return p, nil
}

// resource finds the PROJECT entry of a group, version and kind.
func (p Project) resource(group, version, kind string) (Resource, bool) {
	for _, r := range p.Resources {
		if r.Group == group && r.Version == version && r.Kind == kind {
			return r, true
		}
	}
	return Resource{}, false
}
