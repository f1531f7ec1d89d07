//go:build race

package collectors

// raceDetector: the test binary runs under the race detector (test/run.sh's
// race step), where a single-goroutine test runs about ten times slower and
// finds no race that a shorter run would miss.
const raceDetector = true
