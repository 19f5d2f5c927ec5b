package scaffold

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAddMakeTarget(t *testing.T) {
	const section = "##@ kopf-go\n\nkopf-test:\n\ttrue\n\n"
	got, changed := addMakeTarget(goV4Makefile, section)
	if !changed || !strings.Contains(got, "\t@\"$(ENVTEST)\" use $(ENVTEST_K8S_VERSION) --bin-dir \"$(LOCALBIN)\" -p path\n") ||
		!strings.Contains(got, "\tgo test -tags=e2e ./test/e2e/\n\n##@ kopf-go\n\nkopf-test:\n\ttrue\n\n##@ Build\n") {
		t.Errorf("addMakeTarget() changed=%v:\n%s", changed, got)
	}
	if again, changed := addMakeTarget(got, section); changed || again != got {
		t.Errorf("addMakeTarget() of a Makefile with the target changed it")
	}
	got, _ = addMakeTarget("all:\n\ttrue", section)
	if diff := cmp.Diff("all:\n\ttrue\n\n"+section, got); diff != "" {
		t.Errorf("addMakeTarget() without a Build section -want +got:\n%s", diff)
	}
}

// offlineGoV4Makefile is goV4Makefile after runTestsOffline.
const offlineGoV4Makefile = `##@ Development

# kopf-go: the tests run against kube-apiserver and etcd built from source
# through the Go module proxy by hack/envtest-binaries.sh (once; cached),
# which needs no other network, unlike setup-envtest's downloads.
.PHONY: test
test: manifests generate fmt vet ## Run tests.
	assets="$$(bash hack/envtest-binaries.sh)" && KUBEBUILDER_ASSETS="$$assets" go test $$(go list ./... | grep -v /e2e) -coverprofile cover.out

.PHONY: test-e2e
test-e2e: manifests ## Run the e2e tests.
	go test -tags=e2e ./test/e2e/

##@ Build

build: ## Build manager binary.
	go build -o bin/manager cmd/main.go

##@ Dependencies

.PHONY: setup-envtest
setup-envtest: envtest ## Download the envtest binaries.
	@"$(ENVTEST)" use $(ENVTEST_K8S_VERSION) --bin-dir "$(LOCALBIN)" -p path
`

func TestRunTestsOffline(t *testing.T) {
	tests := []struct {
		name, makefile, want string
		changed              bool
		wantErr              string
	}{
		{name: "go/v4's test target", makefile: goV4Makefile, want: offlineGoV4Makefile, changed: true},
		{name: "edited already", makefile: offlineGoV4Makefile, want: offlineGoV4Makefile},
		{
			name: "older kubebuilder v4: envtest prerequisite, unquoted, no .PHONY",
			makefile: "test: manifests envtest fmt ## Run tests.\n" +
				"\tKUBEBUILDER_ASSETS=\"$(shell $(ENVTEST) use $(ENVTEST_K8S_VERSION) --bin-dir $(LOCALBIN) -p path)\" go test ./... -coverprofile cover.out\n",
			want: offlineNote + "test: manifests fmt ## Run tests.\n" +
				"\tassets=\"$$(bash hack/envtest-binaries.sh)\" && KUBEBUILDER_ASSETS=\"$$assets\" go test ./... -coverprofile cover.out\n",
			changed: true,
		},
		{
			name:     "a silent recipe, no help comment, a continued line",
			makefile: "all: test\n\ntest: setup-envtest\n\t@KUBEBUILDER_ASSETS=\"$(shell \"$(ENVTEST)\" use 1.37 -p path)\" \\\n\t  go test ./...\n",
			want: "all: test\n\n" + offlineNote + "test:\n" +
				"\t@assets=\"$$(bash hack/envtest-binaries.sh)\" && KUBEBUILDER_ASSETS=\"$$assets\" \\\n\t  go test ./...\n",
			changed: true,
		},
		{
			name:     "set by hand to the script's directory",
			makefile: "test:\n\tKUBEBUILDER_ASSETS=\"$$(bash hack/envtest-binaries.sh)\" go test ./...\n",
			want:     "test:\n\tKUBEBUILDER_ASSETS=\"$$(bash hack/envtest-binaries.sh)\" go test ./...\n",
		},
		{
			name:     "no test target: test-e2e and a variable are not one",
			makefile: "test := x\ntest-e2e:\n\tKUBEBUILDER_ASSETS=\"$(shell $(ENVTEST) use 1.37 -p path)\" go test ./test/e2e/\n",
			wantErr:  errNoTestTarget.Error(),
		},
		{
			name:     "a test target of another shape",
			makefile: "test: setup-envtest\n\tgo test ./...\n\nother:\n\tKUBEBUILDER_ASSETS=\"$(shell $(ENVTEST) use 1.37 -p path)\" go test ./...\n",
			wantErr: "the Makefile's test target does not set KUBEBUILDER_ASSETS from setup-envtest as go/v4's does, so kopf-go leaves it alone: " +
				"give its `go test` the script's binaries, e.g. KUBEBUILDER_ASSETS=\"$$(bash hack/envtest-binaries.sh)\" go test ... in the recipe (see kopf-go's docs/kubebuilder-plugin.md), then run the command again",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed, err := runTestsOffline(tt.makefile)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("runTestsOffline() error = %v, want %q", err, tt.wantErr)
				}
				if got != tt.makefile || changed {
					t.Errorf("runTestsOffline() changed the Makefile although it failed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || changed != tt.changed {
				t.Errorf("runTestsOffline() changed=%v, want %v; -want +got:\n%s", changed, tt.changed, diff)
			}
		})
	}
}
