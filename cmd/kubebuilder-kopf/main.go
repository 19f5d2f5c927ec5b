// Command kubebuilder-kopf is a kubebuilder v4 external plugin,
// kopf.kopf.dev/v1-alpha, that adds kopf-go to a kubebuilder project and
// scaffolds kopf-go handlers per kind (docs/kubebuilder-plugin.md).
//
// Kubebuilder runs it once per request: a JSON request on stdin, exactly
// one JSON response on stdout. Errors travel in the response, diagnostics
// on stderr. Install it with `make install-plugin`.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	// Nothing but the response may reach stdout: whatever else would print
	// there goes to stderr.
	stdout := os.Stdout
	os.Stdout = os.Stderr
	os.Exit(run(os.Stdin, stdout, os.Stderr, time.Now()))
}

// run answers the request on stdin. Its exit status is 0 whenever a
// response was written, errors included: kubebuilder shows the messages of
// an error response, but only "exit status 1" of a failed process.
func run(stdin io.Reader, stdout, stderr io.Writer, now time.Time) int {
	req, err := readRequest(stdin)
	var resp response
	var notes []string
	if err != nil {
		resp = failure("", err)
	} else {
		resp, notes = handle(req, now)
	}
	for _, note := range notes {
		fmt.Fprintln(stderr, "kopf.kopf.dev:", note)
	}
	if err := json.NewEncoder(stdout).Encode(resp); err != nil {
		fmt.Fprintln(stderr, "kopf.kopf.dev: write the response:", err)
		return 1
	}
	return 0
}
