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
# A count it cannot take is "n/a (why)", never 0.0: no engine pid file, dockerd not moved, no
# docker cgroup (the systemd cgroup driver puts containers in system.slice/docker-ID.scope).
# The docker cgroup holds every container of the engine, the command's or not.
# PYTEST_HERMES_CPUACCT_ROOT and PYTEST_HERMES_DOCKER_PIDFILE name another controller root or
# engine pid file (an engine started with --pidfile).
set -u
name=${1:?usage: cgroup_cpu.sh NAME COMMAND...}
shift
root=${PYTEST_HERMES_CPUACCT_ROOT:-/sys/fs/cgroup/cpuacct}
pidfile=${PYTEST_HERMES_DOCKER_PIDFILE:-/var/run/docker.pid}
if [ ! -f "$root/cpuacct.usage" ]; then
    echo "cgroup_cpu.sh: no cgroup v1 cpuacct controller at $root (cgroup v2: read cpu.stat usage_usec)" >&2
    exit 2
fi
cg=$root/hermes-prof-$name
daemons=$root/hermes-prof-dockerd
mkdir -p "$cg" "$daemons"
no_daemons="no engine pid file $pidfile"
if [ -f "$pidfile" ]; then
    engine=$(cat "$pidfile")
    no_daemons="dockerd (pid $engine) not moved into $daemons"
    if echo "$engine" > "$daemons/cgroup.procs" 2>/dev/null; then
        no_daemons=""
        for pid in $(cat "/proc/$engine/task/$engine/children" 2>/dev/null); do
            echo "$pid" > "$daemons/cgroup.procs" 2>/dev/null || true
        done
    fi
fi
usage() { cat "$1/cpuacct.usage" 2>/dev/null; }
t0=$(usage "$cg"); d0=$(usage "$daemons"); c0=$(usage "$root/docker")
bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$cg" "$@"
rc=$?
t1=$(usage "$cg"); d1=$(usage "$daemons"); c1=$(usage "$root/docker")
no_containers=""
if [ -z "$c1" ]; then no_containers="no docker cgroup $root/docker"; elif [ -z "$c0" ]; then c0=0; fi  # made during the run
# CPU-s between two counts in ns, or "n/a (WHY)" when either is missing or WHY is set
s() { if [ -n "$3" ] || [ -z "$1" ] || [ -z "$2" ]; then printf 'n/a (%s)' "${3:-no counter}"; else
      awk -v n="$(($2 - $1))" 'BEGIN { printf "%.1f", n / 1e9 }'; fi; }
echo "cgroup_cpu: CPU-s: command tree $(s "$t0" "$t1" "")  docker daemons $(s "$d0" "$d1" "$no_daemons")" \
     " containers $(s "$c0" "$c1" "$no_containers")  (exit $rc)" >&2
exit $rc
