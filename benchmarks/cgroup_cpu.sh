#!/bin/bash
# CPU-seconds of a command's whole process tree, of the docker engine's daemons and of the
# containers' processes while it runs, from cgroup v1 cpuacct counters (exact, exited processes
# included; docs/testing.md "Where the CPU goes, by cgroup").
#
#   sudo benchmarks/cgroup_cpu.sh NAME COMMAND...      e.g.  sudo benchmarks/cgroup_cpu.sh ci bash .ci/run
#
# Needs root and the cpuacct controller of cgroup v1 at /sys/fs/cgroup/cpuacct (this project's
# reference machine). The command runs in the cgroup hermes-prof-NAME. The engine's daemons are
# moved into hermes-prof-dockerd once: dockerd by its pid file (/var/run/docker.pid) and its
# direct children (containerd), so the shims they start later are counted there too; nothing is
# signalled. Containers are counted from docker's own cgroup (/sys/fs/cgroup/cpuacct/docker).
# On cgroup v2 it exits with a message: there cpu.stat's usage_usec holds the same counts.
set -u
name=${1:?usage: cgroup_cpu.sh NAME COMMAND...}
shift
root=/sys/fs/cgroup/cpuacct
if [ ! -f "$root/cpuacct.usage" ]; then
    echo "cgroup_cpu.sh: no cgroup v1 cpuacct controller at $root (cgroup v2: read cpu.stat usage_usec)" >&2
    exit 2
fi
cg=$root/hermes-prof-$name
daemons=$root/hermes-prof-dockerd
mkdir -p "$cg" "$daemons"
if [ -f /var/run/docker.pid ]; then
    engine=$(cat /var/run/docker.pid)
    for pid in "$engine" $(cat "/proc/$engine/task/$engine/children" 2>/dev/null); do
        echo "$pid" > "$daemons/cgroup.procs" 2>/dev/null || true
    done
fi
usage() { cat "$1/cpuacct.usage" 2>/dev/null || echo 0; }
t0=$(usage "$cg"); d0=$(usage "$daemons"); c0=$(usage "$root/docker")
bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$cg" "$@"
rc=$?
t1=$(usage "$cg"); d1=$(usage "$daemons"); c1=$(usage "$root/docker")
s() { awk -v n="$1" 'BEGIN { printf "%.1f", n / 1e9 }'; }
echo "cgroup_cpu: CPU-s: command tree $(s $((t1 - t0)))  docker daemons $(s $((d1 - d0)))" \
     " containers $(s $((c1 - c0)))  (exit $rc)" >&2
exit $rc
