package scaffold

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRequireKopf(t *testing.T) {
	tests := []struct {
		name, gomod, want string
		changed           bool
	}{
		{"adds a require", "module m\n", "module m\n\nrequire github.com/kopf-go/kopf v0.2.0\n", true},
		{"adds a newline first", "module m", "module m\n\nrequire github.com/kopf-go/kopf v0.2.0\n", true},
		{"keeps a require line", "module m\n\nrequire github.com/kopf-go/kopf v0.1.0\n", "module m\n\nrequire github.com/kopf-go/kopf v0.1.0\n", false},
		{"keeps one in a block", "module m\n\nrequire (\n\tgithub.com/kopf-go/kopf v0.1.0\n)\n", "module m\n\nrequire (\n\tgithub.com/kopf-go/kopf v0.1.0\n)\n", false},
		{"a replace is no require", "module m\n\nreplace github.com/kopf-go/kopf => ../k\n",
			"module m\n\nreplace github.com/kopf-go/kopf => ../k\n\nrequire github.com/kopf-go/kopf v0.2.0\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := requireKopf(tt.gomod, "v0.2.0")
			if diff := cmp.Diff(tt.want, got); diff != "" || changed != tt.changed {
				t.Errorf("requireKopf() changed=%v, want %v; -want +got:\n%s", changed, tt.changed, diff)
			}
		})
	}
}

func TestReplaceKopf(t *testing.T) {
	tests := []struct {
		target, gomod, want, wantErr string
	}{
		{target: "/src/kopf-go", gomod: "module m\n", want: "module m\n\nreplace github.com/kopf-go/kopf => /src/kopf-go\n"},
		{target: "../kopf-go", gomod: "module m\n", want: "module m\n\nreplace github.com/kopf-go/kopf => ../kopf-go\n"},
		{target: "/my src/kopf", gomod: "module m\n", want: "module m\n\nreplace github.com/kopf-go/kopf => \"/my src/kopf\"\n"},
		{target: "example.com/fork@v0.3.0", gomod: "module m\n", want: "module m\n\nreplace github.com/kopf-go/kopf => example.com/fork v0.3.0\n"},
		{target: "/x", gomod: "module m\n\nreplace (\n\tgithub.com/kopf-go/kopf => ../y\n)\n", want: "module m\n\nreplace (\n\tgithub.com/kopf-go/kopf => ../y\n)\n"},
		{target: "kopf-go", wantErr: `--kopf-replace "kopf-go": want a directory (absolute, or ./ or ../ relative to the project) or module@version`},
		{target: "example.com/fork@", wantErr: `--kopf-replace "example.com/fork@": want module@version`},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			got, _, err := replaceKopf(tt.gomod, tt.target)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("replaceKopf() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("replaceKopf() -want +got:\n%s", diff)
			}
		})
	}
}

func TestWireMain(t *testing.T) {
	const call = "\tkopf.Setup(mgr)\n"
	got, changed, err := wireMain(goV4Main, "example.com/demo", call)
	if err != nil || !changed {
		t.Fatalf("wireMain() changed=%v, err=%v", changed, err)
	}
	mustParse(t, "main.go", got)
	mustContain(t, "main.go", got,
		"\t\"example.com/demo/internal/kopf\"\n\t// +kubebuilder:scaffold:imports",
		"\tkopf.Setup(mgr)\n\t// +kubebuilder:scaffold:builder")

	again, changed, err := wireMain(got, "example.com/demo", call)
	if err != nil || changed || again != got {
		t.Errorf("wireMain() of a wired main.go: changed=%v, err=%v", changed, err)
	}

	_, _, err = wireMain(strings.ReplaceAll(goV4Main, builderMarker, ""), "example.com/demo", call)
	if err == nil || !strings.Contains(err.Error(), "+kubebuilder:scaffold:builder") {
		t.Errorf("wireMain() without the builder marker: error = %v", err)
	}
}

func TestKeepStatusFields(t *testing.T) {
	got, changed, kept := keepStatusFields(goV4Types, "Widget")
	if !changed || !kept {
		t.Fatalf("keepStatusFields() changed=%v kept=%v", changed, kept)
	}
	mustParse(t, "widget_types.go", got)
	mustContain(t, "widget_types.go", got, "// "+preserveMarker+"\ntype WidgetStatus struct {")

	if again, changed, kept := keepStatusFields(got, "Widget"); changed || !kept || again != got {
		t.Errorf("keepStatusFields() of a marked type: changed=%v kept=%v", changed, kept)
	}
	if _, changed, kept := keepStatusFields(goV4Types, "Gadget"); changed || kept {
		t.Errorf("keepStatusFields() of a missing type: changed=%v kept=%v", changed, kept)
	}
}
