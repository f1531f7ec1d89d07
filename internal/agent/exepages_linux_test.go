package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

func TestExeMappings(t *testing.T) {
	const exe = "/usr/local/bin/drift watch"
	maps := `00400000-01c00000 r-xp 00000000 fe:01 1234    /usr/local/bin/drift watch
01c00000-03000000 r--p 01800000 fe:01 1234    /usr/local/bin/drift watch
03000000-03100000 rw-p 02c00000 fe:01 1234    /usr/local/bin/drift watch
03100000-03200000 rw-p 00000000 00:00 0
04000000-04200000 r--p 00000000 fe:01 99    /usr/local/bin/drift
7f0000000000-7f0000200000 r-xp 00000000 fe:01 1234    /usr/local/bin/drift watch (deleted)
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
`
	got := exeMappings(procMaps(t, maps), exe)
	want := [][2]uint64{{0x400000, 0x1c00000}, {0x1c00000, 0x3000000}, {0x7f0000000000, 0x7f0000200000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("exeMappings = %#x, want %#x (read-only mappings of the executable only)", got, want)
	}
	if _, err := parseProcMaps(t, "zz-01 r-xp 0 fe:01 1 "+exe+"\n"); err == nil {
		t.Fatal("a malformed address range was accepted")
	}
}

// procMaps parses maps as /proc/1/maps of a /proc made for the test, as
// returnExecutablePages parses /proc/self/maps (prometheus/procfs).
func procMaps(t *testing.T, maps string) []*procfs.ProcMap {
	t.Helper()
	m, err := parseProcMaps(t, maps)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func parseProcMaps(t *testing.T, maps string) ([]*procfs.ProcMap, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "1", "maps"), []byte(maps), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := procfs.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := fs.Proc(1)
	if err != nil {
		t.Fatal(err)
	}
	return p.ProcMaps()
}

// TestReturnExecutablePages runs the real thing on the test binary, freshly
// written by go test and so resident: its mapped pages leave the RSS, and its
// cached pages that nothing maps leave the page cache.
func TestReturnExecutablePages(t *testing.T) {
	cachedBefore := exeCachedPages(t)
	st, err := returnExecutablePages()
	if pageoutUnsupported(err) {
		t.Skipf("this kernel has no MADV_PAGEOUT: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	cachedAfter := exeCachedPages(t)
	t.Logf("%d mappings; resident file pages %d -> %d KiB; the executable's cached pages %d -> %d",
		st.Mappings, st.RssFileBeforeKiB, st.RssFileAfterKiB, cachedBefore, cachedAfter)
	if st.Mappings < 2 || st.RssFileBeforeKiB <= 0 {
		t.Fatalf("%+v: want the text and read-only data mappings and a readable RssFile", st)
	}
	if st.RssFileAfterKiB >= st.RssFileBeforeKiB/2 {
		t.Errorf("resident file pages %d -> %d KiB: want at least half returned", st.RssFileBeforeKiB, st.RssFileAfterKiB)
	}
	if cachedAfter >= cachedBefore {
		t.Errorf("the executable's cached pages %d -> %d: want fewer after POSIX_FADV_DONTNEED", cachedBefore, cachedAfter)
	}
}

// exeCachedPages counts the test binary's pages in the page cache (mincore
// over a mapping of it that is never touched).
func exeCachedPages(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(m) }()
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
