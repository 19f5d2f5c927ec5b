package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/kopf-go/kopf/test/bench/internal/requests"
)

// Stats is what /stats answers. The driver reads it before and after a
// phase and takes the differences.
type Stats struct {
	Requests map[string]int `json:"requests"`
	Calls    map[string]int `json:"calls"`
	Stale    int            `json:"stale"`
	Daemons  int64          `json:"daemons"`
	// CPU is the process's user and system time, in seconds.
	CPU float64 `json:"cpu"`
	// HeapInuse (spans in use), HeapAlloc (live objects, after a
	// collection) and StackInuse are the Go runtime's; RSS is the
	// process's resident memory; all in bytes.
	HeapInuse  uint64 `json:"heap_inuse"`
	HeapAlloc  uint64 `json:"heap_alloc"`
	StackInuse uint64 `json:"stack_inuse"`
	RSS        uint64 `json:"rss"`
	Goroutines int    `json:"goroutines"`
	// TotalAlloc and Mallocs are the bytes and objects allocated since
	// the start, freed or not.
	TotalAlloc uint64 `json:"total_alloc"`
	Mallocs    uint64 `json:"mallocs"`
	// FirstCreate is when each object's create handler was first called,
	// in Unix nanoseconds; only with ?first=1.
	FirstCreate map[string]int64 `json:"first_create,omitempty"`
}

// statsHandler serves the stats; ?gc=1 collects garbage first, so that
// the heap figure is what is live.
func statsHandler(counter *requests.Counter, rec *recorder, heapProfile string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Query().Get("gc") == "1" {
			runtime.GC()
			runtime.GC()
			if heapProfile != "" {
				if err := writeHeapProfile(heapProfile); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
			}
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		s := Stats{Requests: counter.Counts(), Goroutines: runtime.NumGoroutine(), Daemons: rec.daemons.Load()}
		rec.mu.Lock()
		s.Calls = make(map[string]int, len(rec.calls))
		for k, v := range rec.calls {
			s.Calls[k] = v
		}
		s.Stale = rec.stale
		if req.URL.Query().Get("first") == "1" {
			s.FirstCreate = make(map[string]int64, len(rec.firstCreate))
			for k, v := range rec.firstCreate {
				s.FirstCreate[k] = v
			}
		}
		rec.mu.Unlock()
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
			s.CPU = seconds(ru.Utime) + seconds(ru.Stime)
		}
		s.HeapInuse, s.HeapAlloc, s.StackInuse = m.HeapInuse, m.HeapAlloc, m.StackInuse
		s.TotalAlloc, s.Mallocs = m.TotalAlloc, m.Mallocs
		s.RSS = residentBytes()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
}

func seconds(tv syscall.Timeval) float64 {
	return float64(tv.Sec) + float64(tv.Usec)/1e6
}

// residentBytes is VmRSS from /proc/self/status, 0 if unknown.
func residentBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		if value, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
