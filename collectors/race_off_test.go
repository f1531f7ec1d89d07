//go:build !race

package collectors

const raceDetector = false
