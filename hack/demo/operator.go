package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kopf-go/kopf/test/testenv"
)

// stopTimeout bounds how long the operator may take to exit after SIGTERM.
const stopTimeout = 30 * time.Second

// operator is an example operator running as a child process. Every way
// out of the demo goes through stop or Kill, which wait for the process's
// goroutine.
type operator struct {
	*testenv.Process
	// shown is how much of the output has been printed already.
	shown int
}

// startOperator runs the binary with the given arguments.
func startOperator(bin string, args ...string) (*operator, error) {
	p, err := testenv.StartProcess(bin, args, nil)
	if err != nil {
		return nil, err
	}
	return &operator{Process: p}, nil
}

// stop sends SIGTERM and waits for the process to exit; it fails unless
// the exit code is 0. A process that does not exit within stopTimeout, or
// before ctx ends, is killed.
func (op *operator) stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	return op.Stop(ctx)
}

// printNew prints the output lines that have not been printed yet,
// indented, under a heading.
func (op *operator) printNew(heading string) {
	out := op.Output()
	fresh := strings.TrimRight(out[op.shown:], "\n")
	op.shown = len(out)
	fmt.Printf("\n%s\n", heading)
	if fresh == "" {
		fmt.Println("    (nothing)")
		return
	}
	for _, line := range strings.Split(fresh, "\n") {
		fmt.Printf("    | %s\n", line)
	}
}
