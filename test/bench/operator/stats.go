package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/kopf-go/kopf/test/bench/internal/requests"
	"github.com/kopf-go/kopf/test/bench/internal/stats"
)

// statsHandler serves the stats; ?gc=1 collects garbage first, so that
// the heap figure is what is live.
func statsHandler(counter *requests.Counter, rec *recorder, heapProfile string) http.Handler {
	mux := http.NewServeMux()
	// A CPU profile of a stretch the driver chooses (a takeover's), of a
	// process that may never exit cleanly to write its --cpuprofile.
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	mux.Handle("/debug/pprof/allocs", httppprof.Handler("allocs"))
	mux.Handle("/debug/pprof/block", httppprof.Handler("block"))
	mux.Handle("/debug/pprof/mutex", httppprof.Handler("mutex"))
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
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
		s := collect(counter, rec, req.URL.Query().Get("first") == "1")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	return mux
}

// collect reads the stats; first adds the create handler's first calls.
func collect(counter *requests.Counter, rec *recorder, first bool) stats.Stats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s := stats.Stats{Requests: counter.Counts(), Goroutines: runtime.NumGoroutine(), Daemons: rec.daemons.Load()}
	rec.mu.Lock()
	s.Calls = make(map[string]int, len(rec.calls))
	for k, v := range rec.calls {
		s.Calls[k] = v
	}
	s.Stale = rec.stale
	if first {
		s.FirstCreate = make(map[string]int64, len(rec.firstCreate))
		for k, v := range rec.firstCreate {
			s.FirstCreate[k] = v
		}
	}
	rec.mu.Unlock()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.CPU = seconds(ru.Utime) + seconds(ru.Stime)
		s.SystemCPU, s.MinorFaults = seconds(ru.Stime), ru.Minflt
	}
	s.HeapInuse, s.HeapAlloc, s.StackInuse = m.HeapInuse, m.HeapAlloc, m.StackInuse
	s.TotalAlloc, s.Mallocs = m.TotalAlloc, m.Mallocs
	s.GCCycles, s.GCCPU = m.NumGC, gcCPU()
	s.RSS = residentBytes()
	return s
}

// gcCPU is the CPU the garbage collector took since the start, in
// seconds, as the Go runtime estimates it.
func gcCPU() float64 {
	sample := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return sample[0].Value.Float64()
}

// finalStatsPrefix starts the line with the stats that the operator
// prints as it exits.
const finalStatsPrefix = "final stats "

// printFinalStats prints the stats as one line on stdout, for the driver
// to read after the operator has exited.
func printFinalStats(counter *requests.Counter, rec *recorder) {
	b, err := json.Marshal(collect(counter, rec, false))
	if err != nil {
		return
	}
	fmt.Printf("%s%s\n", finalStatsPrefix, b)
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
