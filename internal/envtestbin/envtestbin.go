// Package envtestbin carries the script that builds envtest's control-plane
// binaries (kube-apiserver and etcd) from source through the Go module
// proxy, so that pkg/kopftest can run it from the module cache (where files
// lose their execute bits) and the kubebuilder plugin can write it into a
// project.
package envtestbin

import _ "embed"

// Script is envtest-binaries.sh: run with bash, it builds the binaries once
// (cached in $XDG_DATA_HOME/kubebuilder-envtest) and prints their directory.
//
//go:embed envtest-binaries.sh
var Script []byte
