// Package lint checks rendered Kubernetes manifests offline: the documents go
// through the same value-free transforms as the informers (internal/transform), into
// the same model, and the same detectors run (collectors, detect), so a rule is
// written once. Secret values are fingerprinted and dropped by the transform; no
// output, log line or error of this package carries one.
package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Limits on the input. Kubernetes objects are at most a few MiB (etcd's request
// limit is 1.5 MiB by default); anything far larger is not a rendered manifest.
const (
	// MaxInputBytes bounds one file or stdin.
	MaxInputBytes = 64 << 20
	// MaxDocumentBytes bounds one YAML document.
	MaxDocumentBytes = 8 << 20
	// MaxDocuments bounds the documents (List items included) of one run.
	MaxDocuments = 200000
	// maxNodes bounds the nodes one document expands to (aliases included): an
	// alias bomb stops here instead of exhausting memory.
	maxNodes = 2000000
	// maxDepth bounds the nesting of one document.
	maxDepth = 512
)

// StdinName is the file name documents read from standard input carry.
const StdinName = "<stdin>"

// Doc is one Kubernetes object of the input: a document of a YAML stream or JSON
// file, or an item of a List.
type Doc struct {
	// File is the path as given (StdinName for standard input).
	File string
	// Line is the 1-based line of the object's first line in File.
	Line int
	// Item is the index in the List the object is an item of, -1 when none.
	Item int
	// APIVersion, Kind, Name and Namespace as written (Namespace may be empty).
	APIVersion, Kind, Name, Namespace string
	// Obj is the object decoded as JSON would decode it.
	Obj map[string]any

	node   *yaml.Node // the object's mapping node
	offset int        // lines before the document's chunk: node lines are relative to it
}

// Group is the API group of the document's apiVersion ("" for the core group).
func (d *Doc) Group() string {
	g, _, ok := strings.Cut(d.APIVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// Problem is input that could not be checked: a file that cannot be read
// (Unreadable), a document that does not parse or decode, or a document skipped
// for a reason the user should know (Note).
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	// Message never quotes the input: it names lines, fields and types.
	Message string `json:"message"`
	// Unreadable: the file or stream could not be read at all.
	Unreadable bool `json:"unreadable,omitempty"`
	// Note: not an error (a YAML document that is not a Kubernetes object, such as
	// a values file in a directory); listed in verbose output only.
	Note bool `json:"note,omitempty"`
}

// Input is everything read from the arguments.
type Input struct {
	Docs     []*Doc
	Problems []Problem
	// Files counts the files (and stdin) read.
	Files int
}

// ReadArgs reads the documents of paths: files, directories (recursively, their
// .yaml, .yml and .json files in lexical order) and "-" for stdin. Every path is
// read; problems are collected, never fatal.
func ReadArgs(paths []string, stdin io.Reader) *Input {
	in := &Input{}
	for _, p := range paths {
		if p == "-" {
			data, err := readBounded(stdin)
			in.Files++
			if err != nil {
				in.Problems = append(in.Problems, Problem{File: StdinName, Message: err.Error(), Unreadable: true})
				continue
			}
			in.add(ParseStream(StdinName, data))
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			in.Problems = append(in.Problems, Problem{File: p, Message: describeFileErr(err), Unreadable: true})
			continue
		}
		if !st.IsDir() {
			in.readFile(p)
			continue
		}
		var files []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				in.Problems = append(in.Problems, Problem{File: path, Message: describeFileErr(err), Unreadable: true})
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return fs.SkipDir // .git and other hidden folders
				}
				return nil
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			in.Problems = append(in.Problems, Problem{File: p, Message: describeFileErr(err), Unreadable: true})
		}
		slices.Sort(files)
		for _, f := range files {
			in.readFile(f)
		}
	}
	if len(in.Docs) > MaxDocuments {
		in.Problems = append(in.Problems, Problem{File: in.Docs[MaxDocuments].File, Line: in.Docs[MaxDocuments].Line,
			Message: fmt.Sprintf("more than %d documents: the rest were not read", MaxDocuments), Unreadable: true})
		in.Docs = in.Docs[:MaxDocuments]
	}
	return in
}

func (in *Input) readFile(path string) {
	in.Files++
	f, err := os.Open(path)
	if err != nil {
		in.Problems = append(in.Problems, Problem{File: path, Message: describeFileErr(err), Unreadable: true})
		return
	}
	defer f.Close()
	data, err := readBounded(f)
	if err != nil {
		in.Problems = append(in.Problems, Problem{File: path, Message: err.Error(), Unreadable: true})
		return
	}
	in.add(ParseStream(path, data))
}

func (in *Input) add(docs []*Doc, probs []Problem) {
	in.Docs = append(in.Docs, docs...)
	in.Problems = append(in.Problems, probs...)
}

// describeFileErr names what went wrong with a path without wrapping anything
// but the operating system's message (which names the path, never content).
func describeFileErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return "cannot read: " + pe.Err.Error()
	}
	return "cannot read: " + err.Error()
}

func readBounded(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", ioErrText(err))
	}
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("larger than %d MiB: not read", MaxInputBytes>>20)
	}
	return data, nil
}

func ioErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// chunk is one document's text and the number of lines before it.
type chunk struct {
	text   []byte
	offset int
}

// lineBreak returns the length of the line break at data[i:] (0 when none).
// The YAML parser counts lines at CR LF, CR, LF, NEL, LS and PS: so must the
// splitter, or lines would drift apart.
func lineBreak(data []byte, i int) int {
	switch {
	case data[i] == '\n':
		return 1
	case data[i] == '\r':
		if i+1 < len(data) && data[i+1] == '\n' {
			return 2
		}
		return 1
	case bytes.HasPrefix(data[i:], []byte("\xc2\x85")):
		return 2
	case bytes.HasPrefix(data[i:], []byte("\xe2\x80\xa8")), bytes.HasPrefix(data[i:], []byte("\xe2\x80\xa9")):
		return 3
	}
	return 0
}

// nextLine returns the end of the line starting at pos (its break excluded)
// and where the next line starts.
func nextLine(data []byte, pos int) (end, next int) {
	for i := pos; i < len(data); i++ {
		if n := lineBreak(data, i); n > 0 {
			return i, i + n
		}
	}
	return len(data), len(data)
}

// countLines counts the lines of data as the YAML parser does.
func countLines(data []byte) int {
	n := 1
	for pos := 0; pos < len(data); n++ {
		_, next := nextLine(data, pos)
		if next == len(data) {
			break
		}
		pos = next
	}
	return n
}

// splitDocuments cuts a YAML stream at its document markers: a line "---"
// (possibly followed by a space and content) starts a document, a line "..."
// ends one. Each document is then parsed on its own, so one malformed document
// does not hide the others.
func splitDocuments(data []byte) []chunk {
	var out []chunk
	start, startLine := 0, 0
	line := 0
	for pos := 0; pos < len(data); {
		end, next := nextLine(data, pos)
		l := data[pos:end]
		marker := bytes.HasPrefix(l, []byte("---")) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t')
		endMarker := bytes.HasPrefix(l, []byte("...")) && len(bytes.TrimSpace(l[3:])) == 0
		if marker || endMarker {
			if pos > start {
				out = append(out, chunk{text: data[start:pos], offset: startLine})
			}
			if marker {
				start, startLine = pos, line // the marker line belongs to its document
			} else {
				start, startLine = next, line+1
			}
		}
		pos = next
		line++
	}
	if start < len(data) {
		out = append(out, chunk{text: data[start:], offset: startLine})
	}
	return out
}

// ParseStream parses one file's (or stdin's) documents: YAML streams, JSON, and
// the items of List kinds. Documents that do not parse are problems with their
// line; the others are returned. It never panics on any input (a fuzz target
// checks).
func ParseStream(file string, data []byte) ([]*Doc, []Problem) {
	var docs []*Doc
	var probs []Problem
	for _, c := range splitDocuments(data) {
		if len(bytes.TrimSpace(c.text)) == 0 {
			continue
		}
		first := c.offset + 1 + leadingBlankLines(c.text)
		if len(c.text) > MaxDocumentBytes {
			probs = append(probs, Problem{File: file, Line: first,
				Message: fmt.Sprintf("document larger than %d MiB: not checked", MaxDocumentBytes>>20)})
			continue
		}
		text := c.text
		if looksJSON(text) {
			text = jsonForYAML(text)
		}
		// A chunk is one document unless the splitter missed a marker the
		// parser sees: read every document it holds.
		dec := yaml.NewDecoder(bytes.NewReader(text))
		for {
			var root yaml.Node
			err := dec.Decode(&root)
			if err == io.EOF {
				break
			}
			if err != nil {
				probs = append(probs, Problem{File: file, Line: first, Message: "malformed document: " + yamlErrText(err, c.offset)})
				break
			}
			if len(root.Content) == 0 {
				continue
			}
			docs, probs = parseRoot(file, &root, c.offset, 10000+4*len(text), docs, probs)
		}
	}
	return docs, probs
}

// parseRoot adds the object (or List items) of one parsed document.
func parseRoot(file string, root *yaml.Node, offset, aliasBudget int, docs []*Doc, probs []Problem) ([]*Doc, []Problem) {
	c := chunk{offset: offset}
	n := root.Content[0]
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return docs, probs // an empty document ("---" with nothing after it)
	}
	line := c.offset + n.Line
	if n.Kind != yaml.MappingNode {
		probs = append(probs, Problem{File: file, Line: line, Message: "malformed document: not a mapping (a Kubernetes object is one)"})
		return docs, probs
	}
	cv := &converter{offset: c.offset, budget: aliasBudget}
	v, err := cv.value(n, 0)
	if err != nil {
		probs = append(probs, Problem{File: file, Line: line, Message: "malformed document: " + err.Error()})
		return docs, probs
	}
	obj := v.(map[string]any)
	d, p := newDoc(file, line, -1, n, c.offset, obj)
	if p != nil {
		probs = append(probs, *p)
		return docs, probs
	}
	items, isList := listItems(d)
	if !isList {
		docs = append(docs, d)
		return docs, probs
	}
	itemsNode := mapGet(n, "items")
	for i, it := range items {
		m, ok := it.(map[string]any)
		var inode *yaml.Node
		if itemsNode != nil && i < len(itemsNode.Content) {
			inode = deref(itemsNode.Content[i])
		}
		iline := line
		if inode != nil {
			iline = c.offset + inode.Line
		}
		if !ok || inode == nil || inode.Kind != yaml.MappingNode {
			probs = append(probs, Problem{File: file, Line: iline, Message: fmt.Sprintf("malformed document: %s item %d is not an object", d.Kind, i)})
			continue
		}
		id, p := newDoc(file, iline, i, inode, c.offset, m)
		if p != nil {
			probs = append(probs, *p)
			continue
		}
		docs = append(docs, id)
	}
	return docs, probs
}

// looksJSON reports whether a document is JSON: its first character past
// white space and a "---" marker opens an object or an array.
func looksJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	if bytes.HasPrefix(b, []byte("---")) {
		b = bytes.TrimLeft(b[3:], " \t\r\n")
	}
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// jsonForYAML rewrites the characters JSON allows raw in strings but YAML
// does not, or reads as line breaks (DEL, the C1 controls, NEL, LS, PS,
// U+FFFE/U+FFFF, and invalid UTF-8, which encoding/json reads as U+FFFD) as
// \u escapes, which mean the same in both. In
// valid JSON they can only be inside strings, so nothing else changes and the
// lines stay where they are.
func jsonForYAML(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		bad := r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x2028 || r == 0x2029 || r == 0xfffe || r == 0xffff ||
			(r == utf8.RuneError && size == 1)
		if !bad {
			if out != nil {
				out = append(out, b[i:i+size]...)
			}
			i += size
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+16), b[:i]...)
		}
		if r == utf8.RuneError {
			r = 0xfffd
		}
		out = fmt.Appendf(out, "\\u%04x", r)
		i += size
	}
	if out == nil {
		return b
	}
	return out
}

func leadingBlankLines(b []byte) int {
	n := 0
	for pos := 0; pos < len(b); n++ {
		end, next := nextLine(b, pos)
		if next == len(b) && end == len(b) {
			return n
		}
		l := bytes.TrimSpace(b[pos:end])
		if len(l) > 0 && !bytes.Equal(l, []byte("---")) {
			return n
		}
		pos = next
	}
	return n
}

// listItems returns the items of a List kind (kind "List" or "<Kind>List" with
// an items list).
func listItems(d *Doc) ([]any, bool) {
	if !strings.HasSuffix(d.Kind, "List") {
		return nil, false
	}
	items, ok := d.Obj["items"].([]any)
	if !ok {
		if _, has := d.Obj["items"]; has || d.Kind == "List" {
			return nil, true // an empty or null items list: nothing to check
		}
		return nil, false
	}
	return items, true
}

func newDoc(file string, line, item int, n *yaml.Node, offset int, obj map[string]any) (*Doc, *Problem) {
	d := &Doc{File: file, Line: line, Item: item, Obj: obj, node: n, offset: offset}
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if av == "" || kind == "" {
		return nil, &Problem{File: file, Line: line, Note: true,
			Message: "not a Kubernetes object (no apiVersion or kind): skipped"}
	}
	d.APIVersion, d.Kind = av, kind
	if md, ok := obj["metadata"].(map[string]any); ok {
		d.Name, _ = md["name"].(string)
		d.Namespace, _ = md["namespace"].(string)
	} else if _, has := obj["metadata"]; has && obj["metadata"] != nil {
		return nil, &Problem{File: file, Line: line, Message: "malformed document: metadata is not an object"}
	}
	return d, nil
}

// yamlErrText is the parser's message with line numbers made absolute. The YAML
// parser's syntax errors name a line and a problem, never the content.
func yamlErrText(err error, offset int) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return "cannot decode"
	}
	if i := strings.IndexAny(msg, "'\"`"); i >= 0 {
		msg = strings.TrimSpace(msg[:i]) + " …" // never quote what the parser saw
	}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		var n int
		if _, e := fmt.Sscanf(rest, "%d", &n); e == nil {
			i := strings.IndexByte(rest, ':')
			if i >= 0 {
				return fmt.Sprintf("line %d:%s", n+offset, rest[i+1:])
			}
		}
	}
	return msg
}

// Rename gives the documents and problems of file from another name (stdin's
// documents the path of what was rendered).
func (in *Input) Rename(from, to string) {
	for _, d := range in.Docs {
		if d.File == from {
			d.File = to
		}
	}
	for i := range in.Problems {
		if in.Problems[i].File == from {
			in.Problems[i].File = to
		}
	}
}
