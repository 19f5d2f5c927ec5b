// Package stats is what the benchmark's operator serves at /stats and
// the driver reads: one type on both sides of the process boundary.
package stats

// Stats is what /stats answers. The driver reads it before and after a
// phase and takes the differences.
type Stats struct {
	Requests map[string]int `json:"requests"`
	Calls    map[string]int `json:"calls"`
	Stale    int            `json:"stale"`
	Daemons  int64          `json:"daemons"`
	// CPU is the process's user and system time, in seconds; SystemCPU
	// the system time alone, and MinorFaults the page faults that needed
	// no I/O (memory touched for the first time, mostly).
	CPU         float64 `json:"cpu"`
	SystemCPU   float64 `json:"system_cpu"`
	MinorFaults int64   `json:"minor_faults"`
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
	// GCCycles are the garbage collections completed since the start, and
	// GCCPU the CPU they took, in seconds, as the Go runtime estimates it
	// (runtime/metrics' /cpu/classes/gc/total: its background workers,
	// the allocating goroutines' assists and the pauses).
	GCCycles uint32  `json:"gc_cycles"`
	GCCPU    float64 `json:"gc_cpu"`
	// FirstCreate is when each object's create handler was first called,
	// in Unix nanoseconds; only with ?first=1.
	FirstCreate map[string]int64 `json:"first_create,omitempty"`
}
