# The two commands a new user runs are `make demo` and `make test`; both
# build the envtest control plane (kube-apiserver, etcd) from source on
# first use, through hack/envtest-binaries.sh, and reuse it afterwards.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

# ASSETS points envtest at the control-plane binaries; the script only
# prints their directory when they are already built.
ASSETS := KUBEBUILDER_ASSETS="$$(hack/envtest-binaries.sh)"

# CONTROL_PLANE are the packages whose tests start a control plane (a
# TestMain through kopftest or test/testenv, which reads
# KUBEBUILDER_ASSETS); make unit runs every other package, with
# KUBEBUILDER_ASSETS naming no directory, so that a package which starts a
# control plane and is not listed here fails there instead of building one.
CONTROL_PLANE := ./cmd/kopf ./pkg/kopftest ./test/admission ./test/bench ./test/e2e ./test/faults \
	./test/integration ./test/panics ./test/plugin ./test/posting ./test/rbac ./test/sharding ./test/tracing

.PHONY: help envtest test demo unit bench lint install-plugin chaos

help:
	@echo "make demo     run an example operator against an embedded control plane and show what it does"
	@echo "make test     go vet, then every test: unit, envtest integration, examples end to end"
	@echo "make unit     every test that needs no control plane (all packages but CONTROL_PLANE's)"
	@echo "make bench    benchmarks under test/bench, one iteration each"
	@echo "make chaos    sharding's fault suite, randomized, for 10 minutes (CHAOS_SEED=N, CHAOS_DURATION=10m, CHAOS_SHORT=1)"
	@echo "make lint     gofmt and go vet"
	@echo "make envtest  build kube-apiserver and etcd for envtest (once; cached)"
	@echo "make install-plugin  install the kubebuilder plugin kopf.kopf.dev/v1-alpha (docs/kubebuilder-plugin.md)"

envtest:
	@hack/envtest-binaries.sh >/dev/null

test: envtest
	go vet ./...
	$(ASSETS) go test ./... -count=1 -timeout 30m

demo: envtest
	$(ASSETS) go run ./hack/demo

unit:
	KUBEBUILDER_ASSETS=/make-unit-starts-no-control-plane go test $$(go list ./... | grep -vxF -f <(go list $(CONTROL_PLANE)))

bench: envtest
	$(ASSETS) go test ./test/bench/... -run '^$$' -bench . -benchtime 1x

# chaos runs the long randomized fault suite of sharding (test/faults,
# build tag chaos): CHAOS_SEED reproduces a schedule (0: a new seed, which
# it prints), CHAOS_DURATION is how long faults come, and CHAOS_SHORT=1
# runs the ring at shortened durations (lease 6 s, renew deadline 4 s,
# renew period 2 s) instead of the defaults.
CHAOS_SEED ?= 0
CHAOS_DURATION ?= 10m
CHAOS_SHORT ?=

chaos: envtest
	$(ASSETS) go test -tags chaos ./test/faults -run TestChaos -count=1 -v -timeout 90m \
		-args -chaos.duration=$(CHAOS_DURATION) -chaos.seed=$(CHAOS_SEED) $(if $(CHAOS_SHORT),-chaos.short)

lint:
	@unformatted="$$(gofmt -l .)"; \
	if [[ -n "$$unformatted" ]]; then echo "gofmt -l: these files need gofmt -w:"; echo "$$unformatted"; exit 1; fi
	go vet ./...

# install-plugin puts the plugin where kubebuilder looks for
# kopf.kopf.dev/v1-alpha: <plugins root>/<name>/<version>/<name>, the root
# being $EXTERNAL_PLUGINS_PATH, else $XDG_CONFIG_HOME/kubebuilder/plugins,
# else the OS's configuration directory.
install-plugin:
	@root="$${EXTERNAL_PLUGINS_PATH:-}"; \
	if [[ -z "$$root" && -n "$${XDG_CONFIG_HOME:-}" ]]; then root="$$XDG_CONFIG_HOME/kubebuilder/plugins"; fi; \
	if [[ -z "$$root" && "$$(uname -s)" == Darwin ]]; then root="$$HOME/Library/Application Support/kubebuilder/plugins"; fi; \
	if [[ -z "$$root" ]]; then root="$$HOME/.config/kubebuilder/plugins"; fi; \
	dir="$$root/kopf.kopf.dev/v1-alpha"; mkdir -p "$$dir"; \
	go build -o "$$dir/kopf.kopf.dev" ./cmd/kubebuilder-kopf; \
	echo "installed $$dir/kopf.kopf.dev"
