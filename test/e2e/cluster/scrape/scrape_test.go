package scrape

import (
	"strings"
	"testing"
)

func TestParseFlattensFamilies(t *testing.T) {
	in := `# TYPE a_total counter
a_total{x="1"} 3
# TYPE g gauge
g 1.5
# TYPE h histogram
h_bucket{le="1"} 2
h_bucket{le="+Inf"} 3
h_sum 4
h_count 3
`
	s, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := Find(s, "a_total", map[string]string{"x": "1"}); len(got) != 1 || got[0].Value != 3 {
		t.Errorf("a_total: %v", got)
	}
	if got := Find(s, "g", nil); len(got) != 1 || got[0].Value != 1.5 {
		t.Errorf("g: %v", got)
	}
	if got := Find(s, "h_bucket", map[string]string{"le": "+Inf"}); len(got) != 1 || got[0].Value != 3 {
		t.Errorf("h_bucket: %v", got)
	}
	if got := Find(s, "h_count", nil); len(got) != 1 || got[0].Value != 3 {
		t.Errorf("h_count: %v", got)
	}
	if got := Find(s, "a_total", map[string]string{"x": "2"}); len(got) != 0 {
		t.Errorf("label filter: %v", got)
	}
}
