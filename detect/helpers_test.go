package detect

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Comparison helpers and Consumer shorthands of this package's tests. The
// records themselves come from internal/model/modeltest.

// sameSlice is reflect.DeepEqual that treats nil and empty slices alike.
func sameSlice[T any](got, want []T) bool {
	if len(got) == 0 && len(want) == 0 {
		return true
	}
	return reflect.DeepEqual(got, want)
}

func checkSlice[T any](t *testing.T, what string, got, want []T) {
	t.Helper()
	if !sameSlice(got, want) {
		t.Errorf("%s:\n got: %s\nwant: %s", what, dumpSlice(got), dumpSlice(want))
	}
}

func dumpSlice[T any](xs []T) string {
	if len(xs) == 0 {
		return "[]"
	}
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, "\n  %+v", x)
	}
	return b.String()
}

// Consumer shorthands.
func byDeploy(name string, pods int) Consumer {
	return Consumer{Kind: "Deployment", Name: name, Pods: pods}
}
func barePod(name string) Consumer   { return Consumer{Kind: "Pod", Name: name, Pods: 1} }
func byES(name string) Consumer      { return Consumer{Kind: "ExternalSecret", Name: name} }
func byRelease(name string) Consumer { return Consumer{Kind: "HelmRelease", Name: name} }
func bySecret(name string) Consumer  { return Consumer{Kind: "Secret", Name: name} }
