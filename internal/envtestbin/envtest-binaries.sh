#!/usr/bin/env bash
# envtest-binaries.sh builds the control-plane binaries that envtest runs
# (etcd and kube-apiserver) from source through the Go module proxy, into the
# directory layout setup-envtest uses, and prints that directory.
#
# It is a no-op when both binaries are already there, so `make test` can call
# it every time. Diagnostics go to stderr; stdout carries only the path, so
# callers can write KUBEBUILDER_ASSETS="$(hack/envtest-binaries.sh)".
set -euo pipefail

K8S_VERSION="${ENVTEST_K8S_VERSION:-1.37.2}"
ETCD_VERSION="${ENVTEST_ETCD_VERSION:-3.6.16}"
GOOS="$(go env GOOS)"
GOARCH="$(go env GOARCH)"
DATA_HOME="${XDG_DATA_HOME:-$HOME/.local/share}"
DEST="${ENVTEST_ASSETS_DIR:-$DATA_HOME/kubebuilder-envtest/k8s/${K8S_VERSION}-${GOOS}-${GOARCH}}"

log() { printf 'envtest-binaries: %s\n' "$*" >&2; }

if [[ -x "$DEST/kube-apiserver" && -x "$DEST/etcd" ]]; then
  echo "$DEST"
  exit 0
fi

mkdir -p "$DEST"
# Test binaries of several packages may ask at once: one builds, the others
# wait for it and then find the binaries there.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DEST/.build.lock"
  flock 9
  if [[ -x "$DEST/kube-apiserver" && -x "$DEST/etcd" ]]; then
    echo "$DEST"
    exit 0
  fi
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The builds below are throwaway modules; keep the caller's GOFLAGS (e.g.
# -mod=vendor) from leaking into them.
export GOFLAGS=-mod=mod
export CGO_ENABLED=0

build_etcd() {
  [[ -x "$DEST/etcd" ]] && return 0
  log "building etcd v${ETCD_VERSION} (once; cached afterwards)"
  mkdir -p "$work/etcd"
  cd "$work/etcd"
  cat >main.go <<'GO'
// Command etcd is etcd's server entry point, built from the Go module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  go mod init envtest.local/etcd >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" >&2
  go mod tidy >&2
  go build -trimpath -o "$DEST/etcd.tmp" . >&2
  mv "$DEST/etcd.tmp" "$DEST/etcd"
}

build_apiserver() {
  [[ -x "$DEST/kube-apiserver" ]] && return 0
  log "building kube-apiserver v${K8S_VERSION} (once, takes several minutes; cached afterwards)"
  mkdir -p "$work/apiserver"
  cd "$work/apiserver"
  go mod init envtest.local/apiserver >/dev/null 2>&1
  # k8s.io/kubernetes points its staging modules at ./staging; pin each of them
  # to the published tag of the same minor instead (v1.X.Y -> v0.X.Y).
  local kmod staging
  kmod="$(go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  staging="$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$kmod")"
  [[ -n "$staging" ]] || { log "no staging modules found in $kmod"; exit 1; }
  for m in $staging; do
    go mod edit -replace "$m=$m@v0.${K8S_VERSION#1.}"
  done
  go get "k8s.io/kubernetes/cmd/kube-apiserver@v${K8S_VERSION}" >&2
  local pkg=k8s.io/component-base/version
  go build -trimpath -o "$DEST/kube-apiserver.tmp" \
    -ldflags "-X $pkg.gitVersion=v${K8S_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION") -X $pkg.gitTreeState=clean" \
    k8s.io/kubernetes/cmd/kube-apiserver >&2
  mv "$DEST/kube-apiserver.tmp" "$DEST/kube-apiserver"
}

build_etcd
build_apiserver
log "ready in $DEST"
echo "$DEST"
