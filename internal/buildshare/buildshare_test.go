package buildshare

import (
	"reflect"
	"testing"
)

func TestDiff(t *testing.T) {
	a := map[string]string{
		"example.com/same":  "v1.0.0",
		"example.com/label": "v1.2.0 => example.com/label v1.0.0",
		"example.com/code":  "v1.0.0",
		"example.com/mine":  "(devel)",
		"example.com/onlyA": "v1.0.0",
	}
	b := map[string]string{
		"example.com/same":  "v1.0.0",
		"example.com/label": "v1.0.0",
		"example.com/code":  "v1.0.0 => example.com/code v0.9.0",
		"example.com/mine":  "v0.1.0",
		"example.com/onlyB": "v1.0.0",
	}
	shared, diffs := Diff(a, b, func(m string) bool { return m == "example.com/mine" })
	want := []string{
		"example.com/code: v1.0.0 vs v1.0.0 => example.com/code v0.9.0",
		"example.com/label: v1.2.0 => example.com/label v1.0.0 vs v1.0.0",
	}
	if shared != 3 || !reflect.DeepEqual(diffs, want) {
		t.Fatalf("Diff = %d, %q; want 3, %q", shared, diffs, want)
	}
}

// TestModulesListsThisModule runs the real go list on this module.
func TestModulesListsThisModule(t *testing.T) {
	mods, err := Modules(".", ".")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mods["github.com/driftwatch/driftwatch"]; !ok {
		t.Fatalf("Modules(.) = %v: want this module", mods)
	}
	if _, err := Modules("/nonexistent-dir-for-buildshare", "."); err == nil {
		t.Fatal("Modules in a missing folder: want an error")
	}
}
