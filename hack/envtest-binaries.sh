#!/usr/bin/env bash
# Builds (once) and prints the directory of kube-apiserver and etcd for envtest;
# the script itself is embedded in the library for pkg/kopftest and the plugin.
exec bash "$(dirname "$0")/../internal/envtestbin/envtest-binaries.sh" "$@"
