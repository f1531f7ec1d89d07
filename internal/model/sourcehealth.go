package model

import (
	"sync"
	"time"
)

// SourceHealth is what every desired-state poller reports, the same for each
// (the Argo CD API poller, the Flux artifact poller): the series
// driftwatch_desired_source_*{source}.
type SourceHealth struct {
	// Reads: reads of what the source declares (an Application's managed
	// resources, an artifact download); Failures: those that failed (no
	// answer, refused, an error status, a body that does not decode).
	Reads, Failures uint64
	// Asked: a read was tried. Up: the last read succeeded.
	Asked, Up bool
	// LastSuccess: when a read last succeeded (zero: never).
	LastSuccess time.Time
}

// SourceTracker records a poller's reads for SourceHealth; safe for
// concurrent use. The zero value is ready.
type SourceTracker struct {
	mu sync.Mutex
	h  SourceHealth
}

// Read records one read of the source at now, ok or failed.
func (t *SourceTracker) Read(ok bool, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.h.Reads++
	t.h.Asked, t.h.Up = true, ok
	if ok {
		t.h.LastSuccess = now
	} else {
		t.h.Failures++
	}
}

// SourceHealth reports the reads recorded so far.
func (t *SourceTracker) SourceHealth() SourceHealth {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.h
}
