package activity

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// Records written at once by many goroutines through two Logs of one
// file (as two processes of one replica would) come back whole.
func TestConcurrentAppends(t *testing.T) {
	defer goleak.VerifyNone(t)
	path := filepath.Join(t.TempDir(), "r.jsonl")
	logs := make([]*Log, 2)
	for i := range logs {
		l, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		logs[i] = l
	}
	var want []Record
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				r := Record{Actor: fmt.Sprintf("pod-%d/%d", g%2, g), Object: "ns/o", UID: "u", What: Daemon, Event: Beat,
					At: int64(g*1000 + i), Run: int64(g)}
				if err := logs[g%2].Write(r); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want = append(want, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(want, func(i, j int) bool { return want[i].At < want[j].At })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records -want +got:\n%s", diff)
	}
}

func TestReadFile(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []Record
		wantErr bool
	}{
		{name: "empty", content: ""},
		{name: "two lines", content: `{"actor":"a/1","object":"n/o","uid":"u","what":"create","event":"start","at":5,"run":1}` + "\n" +
			`{"actor":"a/1","object":"n/o","uid":"u","what":"create","event":"end","at":9,"run":1,"done":true}` + "\n",
			want: []Record{{Actor: "a/1", Object: "n/o", UID: "u", What: Create, Event: Start, At: 5, Run: 1},
				{Actor: "a/1", Object: "n/o", UID: "u", What: Create, Event: End, At: 9, Run: 1, Done: true}}},
		{name: "a last line cut short is a write in progress", content: `{"actor":"a/1","object":"n/o","uid":"u","what":"daemon","event":"beat","at":5,"run":1}` + "\n" + `{"actor":"a/1","obj`,
			want: []Record{{Actor: "a/1", Object: "n/o", UID: "u", What: Daemon, Event: Beat, At: 5, Run: 1}}},
		{name: "garbage inside", content: "nonsense\n" + `{"actor":"a/1"}` + "\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.jsonl")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFile(path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ReadFile() error = %v, want an error: %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("records -want +got:\n%s", diff)
			}
		})
	}
}
