package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kopf-go/kopf/test/testenv"
)

// The demo's tables: a title, then one row per object (object, owner or
// "previous -> owner", creator), written in one piece.
var (
	demoRowRE  = regexp.MustCompile(`(?m)^(kopf-demo-\d+)\s+(replica-\d)(?: -> (replica-\d))?\s+(replica-\d)$`)
	demoTitles = []string{"3 replicas share", "replica-2 has stopped", "replica-4 has joined"}
)

// demoRow is one row of a demo's table.
type demoRow struct{ from, owner, creator string }

// The demo runs three replicas in one process, stops one and adds one.
// Its tables must show every object owned by one running replica after
// each step: the leaver's objects, and only those, moved to the others;
// the joiner took objects from the others, and nothing else moved; each
// object's create handler ran once, whoever owns it now. Each object's
// daemon follows it: the old owner stops it before the new one starts it.
func TestShardingExampleDemo(t *testing.T) {
	ns := env.Namespace(t)
	// 24 objects, so that replica-2 surely owns some: with 12, it would own
	// none once in 130 runs.
	p, err := testenv.StartProcess(filepath.Join(binDir, "18-sharding"),
		[]string{"--demo", "--namespace=" + ns, "--objects=24"}, []string{"KUBECONFIG=" + kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		t.Logf("the output of 18-sharding --demo:\n%s", p.Output())
	})
	op := &operator{p}
	started := time.Now()
	extraWaitForExit(t, op)
	t.Logf("the demo took %s", time.Since(started).Round(100*time.Millisecond))
	if err := p.Err(); err != nil {
		t.Fatalf("the demo failed: %v", err)
	}
	out := p.Output()
	tables := make([]map[string]demoRow, len(demoTitles))
	for i, title := range demoTitles {
		tables[i] = demoTable(t, out, title)
		if len(tables[i]) != 24 {
			t.Fatalf("the table %q has %d rows, want 24", title, len(tables[i]))
		}
	}
	checkDemoLeave(t, tables[0], tables[1])
	checkDemoJoin(t, tables[1], tables[2])
	checkDemoDaemons(t, out, tables)
	if !strings.Contains(out, "The objects are deleted; the replicas stop.") {
		t.Error("the demo did not say that it deleted the objects")
	}
}

// demoTable parses the table under the title.
func demoTable(t *testing.T, out, title string) map[string]demoRow {
	t.Helper()
	at := strings.Index(out, "\n"+title)
	if at < 0 {
		t.Fatalf("the output lacks the table %q", title)
	}
	block := out[at+1:]
	if end := strings.Index(block, " moved.\n"); end >= 0 {
		block = block[:end]
	}
	rows := map[string]demoRow{}
	for _, m := range demoRowRE.FindAllStringSubmatch(block, -1) {
		if m[3] == "" {
			rows[m[1]] = demoRow{owner: m[2], creator: m[4]}
		} else {
			rows[m[1]] = demoRow{from: m[2], owner: m[3], creator: m[4]}
		}
	}
	return rows
}

// checkDemoLeave: replica-2's objects, and only those, moved to replica-1
// and replica-3; each object kept its creator.
func checkDemoLeave(t *testing.T, first, second map[string]demoRow) {
	t.Helper()
	moved := 0
	for name, was := range first {
		now := second[name]
		switch {
		case was.from != "" || !slices.Contains([]string{"replica-1", "replica-2", "replica-3"}, was.owner):
			t.Errorf("%s: at first, owned by %s (from %q), want one of the three replicas", name, was.owner, was.from)
		case was.owner == "replica-2" && (now.from != "replica-2" || now.owner == "replica-2"):
			t.Errorf("%s: replica-2 left, but the table shows %q -> %q", name, now.from, now.owner)
		case was.owner != "replica-2" && (now.from != "" || now.owner != was.owner):
			t.Errorf("%s: moved from %s to %s, though replica-2 left", name, was.owner, now.owner)
		case now.creator != was.creator:
			t.Errorf("%s: created by %s, then by %s: the create handler ran twice", name, was.creator, now.creator)
		}
		if now.from != "" {
			moved++
		}
	}
	if moved == 0 {
		t.Error("no object moved when replica-2 left")
	}
	t.Logf("%d objects moved when replica-2 left", moved)
}

// checkDemoJoin: the objects that moved went to replica-4; no other moved.
func checkDemoJoin(t *testing.T, second, third map[string]demoRow) {
	t.Helper()
	moved := 0
	for name, was := range second {
		now := third[name]
		switch {
		case now.from == "" && now.owner != was.owner:
			t.Errorf("%s: owned by %s, then by %s, without a move in the table", name, was.owner, now.owner)
		case now.from != "" && (now.from != was.owner || now.owner != "replica-4"):
			t.Errorf("%s: moved %s -> %s when replica-4 joined; want %s -> replica-4", name, now.from, now.owner, was.owner)
		case now.creator != was.creator:
			t.Errorf("%s: created by %s, then by %s: the create handler ran twice", name, was.creator, now.creator)
		}
		if now.from != "" {
			moved++
		}
	}
	// A quarter of 24 is 6; hashing would give replica-4 none once in
	// 1000 runs.
	if moved == 0 {
		t.Error("no object moved to replica-4 when it joined")
	}
	t.Logf("%d objects moved to replica-4 when it joined", moved)
}

// checkDemoDaemons: each object's daemon ran on its first owner; the
// owner that left stopped it as the operator exited, an owner that handed
// an object over to replica-4 stopped it as for a pause, and the new
// owner started it.
func checkDemoDaemons(t *testing.T, out string, tables []map[string]demoRow) {
	t.Helper()
	for name, row := range tables[0] {
		if !strings.Contains(out, fmt.Sprintf("%s runs the daemon of %s.", row.owner, name)) {
			t.Errorf("%s: no daemon ran on its first owner %s", name, row.owner)
		}
	}
	for i, reason := range []string{"OPERATOR_EXITING", "OPERATOR_PAUSING"} {
		for name, row := range tables[i+1] {
			if row.from == "" {
				continue
			}
			// The reason has the flag DAEMON_SIGNALLED too: the daemon was
			// asked to stop, not cancelled.
			stopped := fmt.Sprintf("%s stops the daemon of %s (%s|DAEMON_SIGNALLED).", row.from, name, reason)
			started := fmt.Sprintf("%s runs the daemon of %s.", row.owner, name)
			checkOrder(t, out, []string{stopped, started})
		}
	}
}
