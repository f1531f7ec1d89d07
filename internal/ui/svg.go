package ui

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
)

// The picture of a delivery path: four columns, left to right — the sources
// (stores, and the Helm release or Argo CD Application that state the keys),
// the ExternalSecrets, the Secret, the workloads — with an edge per link. A
// broken link is red and dashed, and the missing keys are written in red on
// the Secret and on each workload that reads them. Generated as text here,
// every name escaped; styled by the page's stylesheet (classes only, no style
// attributes, so the Content-Security-Policy needs no 'unsafe-inline').

const (
	nodeW     = 250
	colGap    = 56
	lineH     = 16
	padY      = 8
	nodeGap   = 14
	maxChars  = 34
	maxLines  = 7
	marginTop = 8
)

type svgLine struct {
	text  string
	class string // "k" kind, "n" name, "" detail, "miss" missing keys
}

type svgNode struct {
	id    string
	title string // full text for <title>
	lines []svgLine
	bad   bool
	x, y  int
	h     int
}

type svgEdge struct {
	from, to string
	bad      bool
	dashed   bool // an expectation, not a write
}

// clip shortens s to at most n runes with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// wrapList writes "prefix a, b, c" over as many lines as needed (at most
// limit; the last says how many more).
func wrapList(prefix string, items []string, class string, limit int) []svgLine {
	if len(items) == 0 {
		return nil
	}
	var out []svgLine
	cur := prefix
	for i, it := range items {
		piece := it
		if i < len(items)-1 {
			piece += ","
		}
		if len([]rune(cur))+1+len([]rune(piece)) > maxChars && cur != prefix && cur != "" {
			out = append(out, svgLine{text: cur, class: class})
			if len(out) == limit-1 && i < len(items) {
				out = append(out, svgLine{text: fmt.Sprintf("  … %d more", len(items)-i), class: class})
				return out
			}
			cur = "  "
		}
		if cur == "" || cur == "  " || strings.HasSuffix(cur, ":") {
			if strings.HasSuffix(cur, ":") {
				cur += " "
			}
			cur += clip(piece, maxChars-2)
		} else {
			cur += " " + clip(piece, maxChars-2)
		}
	}
	return append(out, svgLine{text: cur, class: class})
}

// SVG renders a Path.
func (p Path) SVG() template.HTML {
	var cols [4][]*svgNode
	var edges []svgEdge
	for i, st := range p.Stores {
		n := &svgNode{id: fmt.Sprintf("s%d", i), bad: st.Broken}
		n.lines = []svgLine{{text: st.Kind, class: "k"}, {text: clip(st.Name, maxChars), class: "n"}}
		n.title = st.Kind + " " + st.Name
		if st.Namespace != "" {
			n.title = st.Kind + " " + st.Namespace + "/" + st.Name
		}
		switch {
		case !st.Found:
			n.lines = append(n.lines, svgLine{text: "not found", class: "miss"})
			n.bad = true
		default:
			l := "provider " + st.Provider
			if st.Ready != "" {
				l += " · Ready=" + st.Ready
			}
			n.lines = append(n.lines, svgLine{text: clip(l, maxChars)})
			if st.Ready != "True" && st.Reason != "" {
				n.lines = append(n.lines, svgLine{text: clip(st.Reason, maxChars), class: "miss"})
			}
		}
		cols[0] = append(cols[0], n)
	}
	for i, x := range p.Expectations {
		n := &svgNode{id: fmt.Sprintf("x%d", i), bad: x.Broken, title: x.Kind + " " + x.Name}
		n.lines = []svgLine{{text: x.Kind, class: "k"}, {text: clip(x.Name, maxChars), class: "n"}}
		n.lines = append(n.lines, wrapList("states:", x.Keys, "", 3)...)
		cols[0] = append(cols[0], n)
		edges = append(edges, svgEdge{from: n.id, to: "secret", bad: x.Broken, dashed: true})
	}
	for i, e := range p.ExternalSecrets {
		n := &svgNode{id: fmt.Sprintf("e%d", i), bad: e.Broken, title: "ExternalSecret " + p.Namespace + "/" + e.Name}
		n.lines = []svgLine{{text: "ExternalSecret", class: "k"}, {text: clip(e.Name, maxChars), class: "n"}}
		l := "Ready=" + e.Ready
		if e.Reason != "" {
			l += " " + e.Reason
		}
		n.lines = append(n.lines, svgLine{text: clip(l, maxChars)})
		if e.CreationPolicy != "" {
			n.lines = append(n.lines, svgLine{text: "creationPolicy " + e.CreationPolicy})
		}
		n.lines = append(n.lines, wrapList("renders:", e.Expected, "", 3)...)
		for _, f := range e.Findings {
			n.lines = append(n.lines, svgLine{text: clip(f, maxChars), class: "miss"})
		}
		cols[1] = append(cols[1], n)
		kind := e.StoreKind
		if kind == "" {
			kind = "SecretStore"
		}
		for j, st := range p.Stores {
			if st.Kind == kind && st.Name == e.StoreName {
				edges = append(edges, svgEdge{from: fmt.Sprintf("s%d", j), to: n.id, bad: st.Broken || !st.Found})
			}
		}
		edges = append(edges, svgEdge{from: n.id, to: "secret", bad: e.Broken})
	}
	sec := &svgNode{id: "secret", title: "Secret " + p.Namespace + "/" + p.Name}
	sec.lines = []svgLine{{text: "Secret", class: "k"}, {text: clip(p.Name, maxChars), class: "n"}}
	if !p.Exists {
		sec.lines = append(sec.lines, svgLine{text: "absent", class: "miss"})
		sec.bad = true
	} else {
		sec.lines = append(sec.lines, wrapList("keys:", p.Keys, "", 4)...)
		if len(p.Keys) == 0 {
			sec.lines = append(sec.lines, svgLine{text: "no keys"})
		}
	}
	var miss []string
	for _, mk := range p.Missing {
		miss = append(miss, mk.Key)
	}
	if len(miss) > 0 {
		sec.bad = true
		sec.lines = append(sec.lines, wrapList("missing:", miss, "miss", 3)...)
	}
	if p.Absent {
		sec.bad = true
	}
	if len(p.Writers) > 0 {
		sec.lines = append(sec.lines, wrapList("written by:", p.Writers, "", 2)...)
	}
	cols[2] = []*svgNode{sec}
	for i, w := range p.Workloads {
		n := &svgNode{id: fmt.Sprintf("w%d", i), bad: w.Broken, title: w.Kind + " " + p.Namespace + "/" + w.Name}
		n.lines = []svgLine{{text: w.Kind, class: "k"}, {text: clip(w.Name, maxChars), class: "n"}}
		l := strconv.Itoa(w.Pods) + " pod"
		if w.Pods != 1 {
			l += "s"
		}
		if len(w.Via) > 0 {
			l += " · " + strings.Join(w.Via, ", ")
		}
		n.lines = append(n.lines, svgLine{text: clip(l, maxChars)})
		reads := w.Keys
		if w.Whole {
			reads = append([]string{"(all keys)"}, reads...)
		}
		n.lines = append(n.lines, wrapList("reads:", reads, "", 2)...)
		n.lines = append(n.lines, wrapList("missing:", w.MissingKeys, "miss", 2)...)
		cols[3] = append(cols[3], n)
		edges = append(edges, svgEdge{from: "secret", to: n.id, bad: w.Broken})
	}

	// Layout: columns that have nodes, each stacked from the top; the Secret
	// in the middle of the height.
	byID := map[string]*svgNode{}
	x := 8
	height := 0
	for c := range cols {
		if len(cols[c]) == 0 {
			continue
		}
		y := marginTop
		for _, n := range cols[c] {
			if len(n.lines) > maxLines {
				n.lines = append(n.lines[:maxLines-1], svgLine{text: "…"})
			}
			n.x, n.y = x, y
			n.h = len(n.lines)*lineH + 2*padY
			y += n.h + nodeGap
			byID[n.id] = n
		}
		if y > height {
			height = y
		}
		x += nodeW + colGap
	}
	width := x - colGap + 8
	if sec.h+2*marginTop < height {
		sec.y = (height - nodeGap - sec.h) / 2
	}

	label := "Delivery path of Secret " + p.Namespace + "/" + p.Name
	if len(miss) > 0 {
		label += "; missing keys: " + strings.Join(miss, ", ")
	}
	b := make([]byte, 0, 1024+512*(len(byID)+len(edges)))
	num := func(prefix string, n int) { b = append(b, prefix...); b = strconv.AppendInt(b, int64(n), 10) }
	b = append(b, `<svg xmlns="http://www.w3.org/2000/svg" class="path" role="img" viewBox="0 0 `...)
	num("", width)
	num(" ", height)
	num(`" width="`, width)
	num(`" height="`, height)
	b = append(b, `" aria-label="`...)
	b = append(b, esc(label)...)
	b = append(b, `"><title>`...)
	b = append(b, esc(label)...)
	b = append(b, `</title>`...)
	for _, e := range edges {
		a, z := byID[e.from], byID[e.to]
		if a == nil || z == nil {
			continue
		}
		x1, y1 := a.x+nodeW, a.y+a.h/2
		x2, y2 := z.x, z.y+z.h/2
		cls := "e"
		if e.dashed {
			cls += " x"
		}
		if e.bad {
			cls += " bad"
		}
		mx := (x1 + x2) / 2
		b = append(b, `<path class="`...)
		b = append(b, cls...)
		num(`" d="M`, x1)
		num(" ", y1)
		num(" C", mx)
		num(" ", y1)
		num(" ", mx)
		num(" ", y2)
		num(" ", x2-4)
		num(" ", y2)
		b = append(b, `"/><path class="`...)
		b = append(b, cls...)
		num(` h" d="M`, x2-9)
		num(" ", y2-5)
		num(" L", x2-1)
		num(" ", y2)
		num(" L", x2-9)
		num(" ", y2+5)
		b = append(b, ` z"/>`...)
		if e.bad {
			num(`<text class="brk" x="`, mx-5)
			num(`" y="`, (y1+y2)/2+5)
			b = append(b, `">✕</text>`...)
		}
	}
	for _, c := range cols {
		for _, n := range c {
			b = append(b, `<g class="n`...)
			if n.bad {
				b = append(b, ` bad`...)
			}
			b = append(b, `"><title>`...)
			b = append(b, esc(n.title)...)
			num(`</title><rect x="`, n.x)
			num(`" y="`, n.y)
			num(`" width="`, nodeW)
			num(`" height="`, n.h)
			b = append(b, `" rx="6"/>`...)
			for i, l := range n.lines {
				b = append(b, `<text`...)
				if l.class != "" {
					b = append(b, ` class="`...)
					b = append(b, l.class...)
					b = append(b, '"')
				}
				num(` x="`, n.x+10)
				num(`" y="`, n.y+padY+lineH*(i+1)-4)
				b = append(b, `">`...)
				b = append(b, esc(l.text)...)
				b = append(b, `</text>`...)
			}
			b = append(b, `</g>`...)
		}
	}
	b = append(b, `</svg>`...)
	return template.HTML(b) //nolint:gosec // every text above goes through esc
}

func esc(s string) string { return template.HTMLEscapeString(s) }

func itoa(i int) string { return strconv.Itoa(i) }
