package faults

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kopf-go/kopf/test/faults/activity"
	"github.com/kopf-go/kopf/test/faults/checker"
)

// check reads every record under the run's records directory and the
// fault log, and runs the checker over them.
func (s *suite) check() checker.Report {
	s.t.Helper()
	records, err := activity.ReadDir(filepath.Join(s.dir, "records"))
	if err != nil {
		s.t.Fatal(err)
	}
	versions, members, held := s.obs.seenVersions()
	return checker.Check(checker.Input{Records: records, Faults: s.log.Entries(), Until: time.Now().UnixNano(),
		Origin: s.began.UnixNano(), Versions: versions, Members: members, MembersHeld: held, LeasePoll: leasePoll})
}

// keep, if set, is where runs leave their records, fault log and the
// replicas' output (a directory per test), for a look afterwards.
var keep = flag.String("faults.keep", "", "keep each run's records, fault log and replica output under this directory")

// runDir is the directory of a run's files: under -faults.keep, or
// temporary.
func runDir(t *testing.T) string {
	t.Helper()
	if *keep == "" {
		return t.TempDir()
	}
	dir := filepath.Join(*keep, t.Name()+"-"+time.Now().Format("20060102-150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("the run's files are in %s", dir)
	return dir
}
