package agent

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestReturnExecutablePagesLeavesWorkingSet runs returnExecutablePages in a
// fresh copy of the test binary, alone in a new memory cgroup (a child of this
// test's; skipped where it cannot make one), and reads what the cgroup is
// charged for the copy's page cache. The working set the kubelet evicts on
// (and kubectl top shows) is the charge minus the inactive file pages: the
// executable's cache must stay inactive. MADV_PAGEOUT alone moves the folios
// it does not free to the active list (measured with --demo: 34 of 72 MiB,
// the working set 20 -> 54 MiB); the POSIX_FADV_DONTNEED after it puts them
// back (0.5 of 69 MiB).
func TestReturnExecutablePagesLeavesWorkingSet(t *testing.T) {
	cg, statFile, active, inactive := childMemoryCgroup(t)
	exe := filepath.Join(t.TempDir(), "agent.test")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyUncached(t, self, exe)

	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" -test.run '^TestExePagesHelper$'`, "sh", cg, exe)
	cmd.Env = append(os.Environ(), exePagesHelperEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close() // the helper exits at EOF
		_ = cmd.Wait()
		for i := 0; i < 50 && os.Remove(cg) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}()
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "returned ") || strings.HasPrefix(s.Text(), "failed ") {
				line <- s.Text()
				break
			}
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var got string
	select {
	case got = <-line:
	case <-time.After(2 * time.Minute):
		t.Fatal("the helper did not report in 2 minutes")
	}
	if strings.HasPrefix(got, "failed ") || got == "" {
		if strings.Contains(got, "invalid argument") {
			t.Skipf("this kernel has no MADV_PAGEOUT: %s", got)
		}
		t.Fatalf("helper: %q", got)
	}
	stat := readMemoryStat(t, filepath.Join(cg, statFile))
	act, inact := stat[active], stat[inactive]
	t.Logf("helper: %s; cgroup file pages: active %.1f MiB, inactive %.1f MiB", got, float64(act)/(1<<20), float64(inact)/(1<<20))
	if act+inact < 8<<20 {
		t.Fatalf("the cgroup holds %d bytes of file pages: want the copy's page cache charged to it (at least 8 MiB)", act+inact)
	}
	if act > (act+inact)/4 {
		t.Errorf("active file pages %.1f of %.1f MiB after returnExecutablePages: want the executable's cache inactive (at most a quarter active), out of the working set",
			float64(act)/(1<<20), float64(act+inact)/(1<<20))
	}
}

const exePagesHelperEnv = "DRIFTWATCH_EXEPAGES_HELPER"

// TestExePagesHelper is the child of TestReturnExecutablePagesLeavesWorkingSet
// (nothing otherwise): it returns its pages, says so, and waits for EOF.
func TestExePagesHelper(t *testing.T) {
	if os.Getenv(exePagesHelperEnv) != "1" {
		t.Skip("the child of TestReturnExecutablePagesLeavesWorkingSet")
	}
	st, err := returnExecutablePages()
	if err != nil {
		fmt.Printf("failed %v\n", err)
	} else {
		fmt.Printf("returned %+v\n", st)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// childMemoryCgroup makes a memory cgroup under this process's (v1's memory
// controller, else v2's unified hierarchy) and names its stat file and
// active/inactive file keys; it skips the test where it cannot.
func childMemoryCgroup(t *testing.T) (dir, statFile, active, inactive string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no /proc/self/cgroup: %v", err)
	}
	var parent string
	statFile, active, inactive = "memory.stat", "active_file", "inactive_file"
	for _, l := range strings.Split(string(b), "\n") {
		if _, p, ok := strings.Cut(l, ":memory:"); ok {
			parent = filepath.Join("/sys/fs/cgroup/memory", p)
			break
		}
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			parent = filepath.Join("/sys/fs/cgroup", p)
		}
	}
	if parent == "" {
		t.Skip("no memory cgroup")
	}
	dir = filepath.Join(parent, fmt.Sprintf("driftwatch-exepages-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup (needs write access to %s): %v", parent, err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) }) // when the test fails before its own removal
	if _, err := os.Stat(filepath.Join(dir, statFile)); err != nil {
		_ = os.Remove(dir)
		t.Skipf("%s has no memory controller: %v", dir, err)
	}
	return dir, statFile, active, inactive
}

func readMemoryStat(t *testing.T, path string) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, " ")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			out[k] = n
		}
	}
	return out
}

// copyUncached copies src to dst and drops dst's page cache, so that its pages
// are charged to the cgroup of whoever faults them in next.
func copyUncached(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}
