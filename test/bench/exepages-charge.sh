#!/usr/bin/env bash
# What the container is charged for the agent's executable, with and without
# --return-executable-pages (docs/performance.md, "The executable's pages").
#
# Builds the agent as the Dockerfile does, copies it to a new file whose page
# cache is dropped, and runs `--demo` as the only process of a new memory
# cgroup (a child of this shell's, cgroup v1 or v2; needs write access there,
# i.e. root), once per mode. Prints, at 1-30 s after the start, the cgroup's
# charge, its page cache, the file pages mapped, the anonymous memory, the
# working set as the kubelet computes it (usage - inactive file) and the
# process's RssFile/RssAnon.
#
#   test/bench/exepages-charge.sh            # both modes
#   LIMIT=70M test/bench/exepages-charge.sh  # under a memory limit
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v fincore > /dev/null || { echo "needs fincore (util-linux)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$work/agent.build" ./cmd/agent

# This shell's memory cgroup: v1's memory controller, else the v2 unified one.
if line=$(grep -m1 ':memory:' /proc/self/cgroup); then
	parent=/sys/fs/cgroup/memory${line#*:memory:}
	v=1
else
	parent=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
	v=2
fi

mib() { awk '{printf "%.1f", $1/1048576}'; }
stat() { awk -v k="$2" '$1==k {printf "%.1f", $2/1048576}' "$1/memory.stat"; }

run() {
	local name=$1
	shift
	local cg=$parent/driftwatch-charge-$name bin=$work/agent-$name
	rmdir "$cg" 2> /dev/null || true
	mkdir "$cg"
	if [ -n "${LIMIT:-}" ]; then
		if [ $v = 1 ]; then echo "$LIMIT" > "$cg/memory.limit_in_bytes"; else echo "$LIMIT" > "$cg/memory.max"; fi
	fi
	cp "$work/agent.build" "$bin"
	python3 -c "import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)" "$bin"
	echo "== $name $* (cgroup v$v${LIMIT:+, limit $LIMIT}); cached pages of the new copy before the start: $(fincore -b -n -o RES "$bin" | awk '{print $1/4096}')"
	local port
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	bash -c "echo \$\$ > '$cg/cgroup.procs'; exec '$bin' --demo --listen 127.0.0.1:$port $*" > "$work/$name.log" 2>&1 &
	local pid=$! start
	start=$(date +%s)
	for t in 1 2 3 5 8 12 20 30; do
		while [ "$(date +%s)" -lt $((start + t)) ]; do sleep 0.2; done
		local usage cache mapped anon inactive
		if [ $v = 1 ]; then
			usage=$(mib < "$cg/memory.usage_in_bytes")
			cache=$(stat "$cg" cache) mapped=$(stat "$cg" mapped_file) anon=$(stat "$cg" rss) inactive=$(stat "$cg" total_inactive_file)
		else
			usage=$(mib < "$cg/memory.current")
			cache=$(stat "$cg" file) mapped=$(stat "$cg" file_mapped) anon=$(stat "$cg" anon) inactive=$(stat "$cg" inactive_file)
		fi
		printf 't=%2ss usage %6s cache %6s mapped_file %6s anon %6s inactive_file %6s working_set %6s | %s\n' "$t" "$usage" "$cache" "$mapped" "$anon" "$inactive" \
			"$(awk -v u="$usage" -v i="$inactive" 'BEGIN{printf "%.1f", u-i}')" \
			"$(awk '/^Rss(File|Anon)/{printf "%s %.1f ", $1, $2/1024}' "/proc/$pid/status")"
	done
	grep -o 'returned the exec.*' "$work/$name.log" | cut -c1-200 || true
	kill "$pid"
	wait "$pid" 2> /dev/null || true
	sleep 0.5
	rmdir "$cg"
}

run on
run off --return-executable-pages=false
