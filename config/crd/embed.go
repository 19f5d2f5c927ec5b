// Package crd carries the peering CRDs (KopfPeering and
// ClusterKopfPeering), so that tools such as the kubebuilder plugin can
// write them into a project without a copy of the YAML to keep in step.
package crd

import "embed"

// Files holds kopfpeerings.yaml and clusterkopfpeerings.yaml, the CRDs
// through which operators (kopf-go and Python Kopf alike) find each other.
//
//go:embed kopfpeerings.yaml clusterkopfpeerings.yaml
var Files embed.FS

// PeeringFiles are the names of the files in Files, in the order to apply
// them.
var PeeringFiles = []string{"clusterkopfpeerings.yaml", "kopfpeerings.yaml"}
