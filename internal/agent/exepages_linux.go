package agent

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// returnExecutablePages gives the kernel back the pages of the agent's own
// executable that the start or the sync left resident (--return-executable-pages:
// Run calls it before the informers start and once the caches have synced).
//
// Why: the executable is 132 MB (kustomize, the Helm and Argo CD libraries,
// ESO's template functions, client-go's scheme). On ext4 and xfs its page
// cache is held in large folios, up to 2 MiB, mapped whole by one page-table
// entry, so a start that runs a few functions in a region (every API group's
// scheme registration runs at init) keeps the whole region resident and in
// the process's RSS: 52-68 MiB at the bench's size, most of it code the agent
// never runs again, against 25 MiB for a bare client-go informer.
//
// How: madvise(MADV_PAGEOUT) over the executable's read-only mappings unmaps
// their pages (the kernel leaves pages that another process also maps), then
// posix_fadvise(POSIX_FADV_DONTNEED) drops cached pages of the file that no
// process maps. Few are: a page the agent maps again keeps its whole large
// folio cached, so the container's memory charge falls by a few MiB and its
// working set (usage - inactive file, where this page cache sits) not at all
// (test/bench/exepages-charge.sh, docs/performance.md "The executable's
// pages"). What falls is the RSS. The pages are clean file pages: nothing is
// written or lost. What the agent runs after
// faults back in through the kernel's ordinary read-around, in small folios.
func returnExecutablePages() (exePages, error) {
	var st exePages
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return st, fmt.Errorf("the executable's path: %w", err)
	}
	self, err := procfs.Self()
	if err != nil {
		return st, fmt.Errorf("/proc/self: %w", err)
	}
	maps, err := self.ProcMaps()
	if err != nil {
		return st, fmt.Errorf("reading /proc/self/maps: %w", err)
	}
	ranges := exeMappings(maps, exe)
	if len(ranges) == 0 {
		return st, fmt.Errorf("no read-only mapping of %s in /proc/self/maps", exe)
	}
	st.Mappings = len(ranges)
	// /proc/self/exe opens the mapped file itself, even when its path was
	// replaced or removed since the start.
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return st, fmt.Errorf("opening the executable for POSIX_FADV_DONTNEED: %w", err)
	}
	defer f.Close()
	// Pages not yet written back (a binary written moments ago, as go test's)
	// would stay cached: write them first (nothing to do for an image's). A
	// failure only leaves such pages cached, so it is not one.
	_ = unix.Fdatasync(int(f.Fd()))
	st.RssFileBeforeKiB = rssFileKiB()
	// A large folio that a running goroutine touches between the two calls
	// is mapped whole again and stays cached: a pass is repeated while 2 MiB
	// mappings of the file remain (measured: one pass left 0 or 60 MiB so
	// mapped, depending on the run).
	for st.Passes < maxExePasses {
		st.Passes++
		for _, r := range ranges {
			// A raw syscall: the ranges are not Go memory, so no []byte over them.
			if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(r[0]), uintptr(r[1]-r[0]), unix.MADV_PAGEOUT); e != 0 {
				st.RssFileAfterKiB = rssFileKiB()
				return st, fmt.Errorf("madvise(MADV_PAGEOUT) over %#x-%#x of %s: %w", r[0], r[1], exe, e)
			}
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			st.RssFileAfterKiB = rssFileKiB()
			return st, fmt.Errorf("posix_fadvise(POSIX_FADV_DONTNEED) on %s: %w", exe, err)
		}
		st.RssFileAfterKiB = rssFileKiB()
		st.PmdMappedKiB = smapsKiB("FilePmdMapped:")
		if st.PmdMappedKiB <= 0 {
			break
		}
	}
	return st, nil
}

// maxExePasses bounds returnExecutablePages' passes.
const maxExePasses = 4

// smapsKiB reads one field of /proc/self/smaps_rollup, -1 when it cannot.
func smapsKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return -1
	}
	return statusField(b, field)
}

// exePages is what returnExecutablePages did.
type exePages struct {
	Mappings, Passes                  int
	RssFileBeforeKiB, RssFileAfterKiB int64 // -1: not readable
	// PmdMappedKiB: the file pages still mapped in 2 MiB folios after the
	// last pass (FilePmdMapped), -1: not readable.
	PmdMappedKiB int64
}

// exeMappings returns the address ranges of maps (/proc/self/maps, parsed
// by prometheus/procfs) that map the file exe without write access: text and
// read-only data, clean pages the kernel can drop and read again.
func exeMappings(maps []*procfs.ProcMap, exe string) [][2]uint64 {
	var out [][2]uint64
	for _, m := range maps {
		// The path ends in " (deleted)" once the file was removed.
		if strings.TrimSuffix(m.Pathname, " (deleted)") != exe || m.Perms == nil || m.Perms.Write || m.EndAddr <= m.StartAddr {
			continue
		}
		out = append(out, [2]uint64{uint64(m.StartAddr), uint64(m.EndAddr)})
	}
	return out
}

// rssFileKiB is the process's resident file-backed memory (RssFile in
// /proc/self/status), -1 when it cannot be read.
func rssFileKiB() int64 {
	self, err := procfs.Self()
	if err != nil {
		return -1
	}
	st, err := self.NewStatus()
	if err != nil {
		return -1
	}
	return int64(st.RssFile / 1024)
}

// statusField is the value in kB of the line "field N kB" of a /proc file,
// -1 when there is none (procfs's ProcSMapsRollup has no FilePmdMapped).
func statusField(b []byte, field string) int64 {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// errNoPageout: the kernel predates MADV_PAGEOUT (Linux 5.4).
var errNoPageout = unix.EINVAL

func pageoutUnsupported(err error) bool { return errors.Is(err, errNoPageout) }
