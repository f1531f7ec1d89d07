package ignorepath

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func f(name string) Segment { return Segment{Kind: SegField, Name: name} }
func idx(n int) Segment     { return Segment{Kind: SegIndex, Index: n} }
func iter() Segment         { return Segment{Kind: SegIter} }
func opt(s Segment) Segment { s.Optional = true; return s }
func sel(c string) Segment  { return Segment{Kind: SegFilter, Name: c} }

func TestParseJSONPointer(t *testing.T) {
	tests := []struct {
		in   string
		want []Segment
		into bool
	}{
		{"", nil, false},
		{"/", []Segment{f("")}, false},
		{"/spec/data", []Segment{f("spec"), f("data")}, false},
		{"/spec/data/0/remoteRef", []Segment{f("spec"), f("data"), idx(0), f("remoteRef")}, true},
		{"/spec/data/12", []Segment{f("spec"), f("data"), idx(12)}, true},
		{"/spec/data/-", []Segment{f("spec"), f("data"), {Kind: SegAppend}}, true},
		{"/spec/x/0/1", []Segment{f("spec"), f("x"), idx(0), idx(1)}, true},
		// leading zero: not an array index (RFC 6901), a member name
		{"/spec/data/01", []Segment{f("spec"), f("data"), f("01")}, false},
		// escapes: ~1 is '/', ~0 is '~', and ~01 is "~1" (not '/')
		{"/metadata/annotations/a~1b", []Segment{f("metadata"), f("annotations"), f("a/b")}, false},
		{"/metadata/annotations/x~0y", []Segment{f("metadata"), f("annotations"), f("x~y")}, false},
		{"/metadata/annotations/~01", []Segment{f("metadata"), f("annotations"), f("~1")}, false},
		{"/spec/template~1data/0", []Segment{f("spec"), f("template/data"), idx(0)}, true},
		// numeric keys of maps are keys
		{"/data/0", []Segment{f("data"), f("0")}, false},
		{"/stringData/1", []Segment{f("stringData"), f("1")}, false},
		{"/metadata/labels/0", []Segment{f("metadata"), f("labels"), f("0")}, false},
		{"/spec/template/metadata/annotations/7", []Segment{f("spec"), f("template"), f("metadata"), f("annotations"), f("7")}, false},
		// a root segment is a member: the root is an object
		{"/0", []Segment{f("0")}, false},
		// spec.data is a list (ExternalSecret), unlike top-level data
		{"/spec/data/0", []Segment{f("spec"), f("data"), idx(0)}, true},
		{"/metadata/annotations/foo", []Segment{f("metadata"), f("annotations"), f("foo")}, false},
	}
	for _, tt := range tests {
		p, err := ParseJSONPointer(tt.in)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(p.Segments, tt.want) || p.IntoList != tt.into {
			t.Errorf("%q:\n got %+v into=%v\nwant %+v into=%v", tt.in, p.Segments, p.IntoList, tt.want, tt.into)
		}
		if got := p.String(); got != tt.in && tt.in != "/metadata/annotations/~01" {
			t.Errorf("%q: String() = %q", tt.in, got)
		}
	}
}

func TestParseJSONPointerErrors(t *testing.T) {
	for _, in := range []string{"spec/data", "/spec/~2", "/spec/a~", "/a/~", "\xff", "/" + strings.Repeat("a", MaxPathLen)} {
		if _, err := ParseJSONPointer(in); err == nil || !errors.Is(err, ErrPath) {
			t.Errorf("%q: want ErrPath, got %v", in, err)
		}
	}
}

func TestParseJQ(t *testing.T) {
	tests := []struct {
		in   string
		want []Segment
		into bool
	}{
		{".", nil, false},
		{".spec.data", []Segment{f("spec"), f("data")}, false},
		{".spec.data[]", []Segment{f("spec"), f("data"), iter()}, true},
		{".spec.data[]?", []Segment{f("spec"), f("data"), opt(iter())}, true},
		{".spec.data[0].remoteRef", []Segment{f("spec"), f("data"), idx(0), f("remoteRef")}, true},
		{".spec.data[-1]", []Segment{f("spec"), f("data"), idx(-1)}, true},
		{".spec.data[1:3]", []Segment{f("spec"), f("data"), {Kind: SegSlice, Name: "1:3"}}, true},
		{".spec.data[:2]", []Segment{f("spec"), f("data"), {Kind: SegSlice, Name: ":2"}}, true},
		{".spec.data[-2:]", []Segment{f("spec"), f("data"), {Kind: SegSlice, Name: "-2:"}}, true},
		{`.spec.data[] | select(.secretKey == "x")`, []Segment{f("spec"), f("data"), iter(), sel(`.secretKey == "x"`)}, true},
		{`.spec.data[] | select(.secretKey == "a)b") | .remoteRef`, []Segment{f("spec"), f("data"), iter(), sel(`.secretKey == "a)b"`), f("remoteRef")}, true},
		{`.spec.template.spec.containers[] | select(.name == "app") | .image`,
			[]Segment{f("spec"), f("template"), f("spec"), f("containers"), iter(), sel(`.name == "app"`), f("image")}, true},
		{`.metadata.annotations["a/b"]`, []Segment{f("metadata"), f("annotations"), f("a/b")}, false},
		{`.metadata.annotations."a/b"`, []Segment{f("metadata"), f("annotations"), f("a/b")}, false},
		{`.["spec"]["data"]`, []Segment{f("spec"), f("data")}, false},
		{`.metadata.labels["0"]`, []Segment{f("metadata"), f("labels"), f("0")}, false},
		{`.spec | .data[]`, []Segment{f("spec"), f("data"), iter()}, true},
		{`.spec.data | .[]`, []Segment{f("spec"), f("data"), iter()}, true},
		{`.spec.data.[0]`, []Segment{f("spec"), f("data"), idx(0)}, true},
		{`.spec?.data`, []Segment{opt(f("spec")), f("data")}, false},
		{`select(.kind == "Secret") | .data`, []Segment{sel(`.kind == "Secret"`), f("data")}, false},
		{`  .spec.data [ 0 ] `, nil, false}, // whitespace before '[' ends the path: error below
		{`.spec.data[ 0 ]`, []Segment{f("spec"), f("data"), idx(0)}, true},
		{`.a_b.c1`, []Segment{f("a_b"), f("c1")}, false},
		{`.x["\u0041"]`, []Segment{f("x"), f("A")}, false},
		{`.spec.data[] | select((.a == "x") and (.b | contains("[")))`, []Segment{f("spec"), f("data"), iter(), sel(`(.a == "x") and (.b | contains("["))`)}, true},
	}
	for _, tt := range tests {
		p, err := ParseJQ(tt.in)
		if tt.want == nil && tt.in != "." {
			if err == nil {
				t.Errorf("%q: want an error, got %+v", tt.in, p.Segments)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(p.Segments, tt.want) || p.IntoList != tt.into {
			t.Errorf("%q:\n got %+v into=%v\nwant %+v into=%v", tt.in, p.Segments, p.IntoList, tt.want, tt.into)
		}
		// The canonical form parses back to the same path.
		p2, err := ParseJQ(p.String())
		if err != nil || !reflect.DeepEqual(p2.Segments, p.Segments) {
			t.Errorf("%q: String() %q does not round-trip: %v %+v", tt.in, p.String(), err, p2.Segments)
		}
	}
}

func TestParseJQErrors(t *testing.T) {
	for _, in := range []string{
		"", "   ", "spec.data", ".spec.data[", ".spec.data[0", ".spec.data[abc]", `.spec["data`, ".spec.", ".spec..data",
		"..", ".spec.data[] |", ".spec | ", "select(", "select()", `select(.a == "x"`, "select(.a ]", "selectx(.a)",
		".spec.data[:]", ".spec.data[-]", ".spec + 1", ".a // .b", `.a["x\(1)"]`, "del(.spec)", ".spec.data[99999999999999999999]",
		`.a[""x]`, "\xff", ".a | | .b",
	} {
		if _, err := ParseJQ(in); err == nil || !errors.Is(err, ErrPath) {
			t.Errorf("%q: want ErrPath, got %v", in, err)
		}
	}
}

func TestReach(t *testing.T) {
	const esG, esK = "external-secrets.io", "ExternalSecret"
	tests := []struct {
		syntax      Syntax
		path        string
		group, kind string
		want        Reach
	}{
		{JSONPointer, "/spec/data/0/remoteRef", esG, esK, ReachIntoElement},
		{JSONPointer, "/spec/data", esG, esK, ReachWholeList},
		{JSONPointer, "/spec/dataFrom", esG, esK, ReachWholeList},
		{JSONPointer, "/spec/data", "", "Secret", ReachNone},
		{JSONPointer, "/spec", esG, esK, ReachNone},
		{JSONPointer, "/spec/data", "*", "*", ReachWholeList},
		{JSONPointer, "/spec/data", "external-secrets.io", "External*", ReachWholeList},
		{JSONPointer, "/data/0", "", "Secret", ReachNone},
		{JSONPointer, "/metadata/annotations/foo", "apps", "Deployment", ReachNone},
		{JSONPointer, "/spec/template/spec/containers/0/image", "apps", "Deployment", ReachIntoElement},
		{JQ, ".spec.data[]", esG, esK, ReachIntoElement},
		{JQ, `.spec.data[] | select(.secretKey == "x")`, esG, esK, ReachIntoElement},
		{JQ, ".spec.data", esG, esK, ReachWholeList},
		{JQ, ".spec.refreshInterval", esG, esK, ReachNone},
		{JQ, `.metadata.annotations["a/b"]`, esG, esK, ReachNone},
		{JQ, `.spec.containers[] | .image`, "", "Pod", ReachIntoElement},
	}
	for _, tt := range tests {
		var p Path
		var err error
		if tt.syntax == JQ {
			p, err = ParseJQ(tt.path)
		} else {
			p, err = ParseJSONPointer(tt.path)
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.path, err)
		}
		if got := p.Reach(tt.group, tt.kind); got != tt.want {
			t.Errorf("%q on %s/%s: got %v, want %v", tt.path, tt.group, tt.kind, got, tt.want)
		}
	}
}

func TestListField(t *testing.T) {
	p, _ := ParseJQ(`.spec.data[] | select(.secretKey == "x") | .remoteRef`)
	lf, ok := p.ListField()
	if !ok || !reflect.DeepEqual(lf, []string{"spec", "data"}) || !p.HasFilter() {
		t.Fatalf("%v %v", lf, ok)
	}
	p, _ = ParseJSONPointer("/metadata/name")
	if _, ok := p.ListField(); ok || p.HasFilter() {
		t.Fatal("no list")
	}
}

// FuzzPath: parsing never panics, errors wrap ErrPath, a list step implies
// IntoList, and the canonical form parses back to the same segments.
func FuzzPath(f *testing.F) {
	for _, s := range []string{
		"", "/", "/spec/data/0/remoteRef", "/metadata/annotations/a~1b", "/spec/data/-", "/a/~0~1/01",
		".spec.data[]", ".spec.data[0].remoteRef", `.spec.data[] | select(.secretKey == "x")`,
		`.metadata.annotations["a/b"]`, ".spec.data[]?", `.spec.data[1:2]`, `select((.a | contains("]")))`,
		`.x."y z"[-3]`, ".", "..", "select(",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) (Path, error){ParseJSONPointer, ParseJQ} {
			p, err := parse(s)
			if err != nil {
				if !errors.Is(err, ErrPath) {
					t.Fatalf("%q: error does not wrap ErrPath: %v", s, err)
				}
				if len(p.Segments) != 0 {
					t.Fatalf("%q: segments returned with an error", s)
				}
				continue
			}
			into := false
			for _, sg := range p.Segments {
				into = into || sg.IsList()
			}
			if into != p.IntoList {
				t.Fatalf("%q: IntoList %v, segments %+v", s, p.IntoList, p.Segments)
			}
			p2, err := parse(p.String())
			if err != nil {
				t.Fatalf("%q: canonical %q does not parse: %v", s, p.String(), err)
			}
			if !sameSegments(p.Segments, p2.Segments) {
				t.Fatalf("%q: canonical %q parses to %+v, want %+v", s, p.String(), p2.Segments, p.Segments)
			}
			_ = p.Reach("external-secrets.io", "ExternalSecret")
		}
	})
}

// sameSegments compares segments.
func sameSegments(a, b []Segment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
