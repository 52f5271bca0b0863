"""Seen (a breaker helper on the merged pid-namespace work, 2026-12-06): whether a run's pid
namespace still lives was judged by reading every process's ``/proc/<pid>/ns/pid``, and a
process this user may not look at made the answer "it lives". An ordinary user may look at no
process of root's (pid 2, ``kthreadd``, is the first), so for every user but root each recorded
namespace of this boot lived for good: the containers, run files and filecell dirs a killed run
in a namespace of its own left (a CI job in a container with the host's network, ``unshare``)
were never swept. Another user's process is never one of this user's runs': it is passed over
now; one of this user's own that may not be read still means "cannot tell"."""

from __future__ import annotations

import json
import socket
import subprocess

import psutil
import pytest

from pytest_hermes_kernel.containers.labels import (LABEL, LABEL_HOST_PID, LABEL_HOST_START, LABEL_HOSTNAME,
                                                    LABEL_PROCESS_TABLE)
from tests import namespaced
from tests.nonroot import unprivileged_user

JUDGE = """
import json, sys
from pytest_hermes_kernel.containers.labels import host_is_gone
from pytest_hermes_kernel.procs import foreign_table, process_table
labels, tables = json.loads(sys.argv[1]) if len(sys.argv) > 1 else json.loads(input())
boot = process_table().split(" ")[0]
out = {}
for name, namespace in tables.items():
    table = f"{boot} {namespace}"
    out[name] = [foreign_table(table), host_is_gone({**labels, %r: table})]
print(json.dumps(out))
""" % LABEL_PROCESS_TABLE


def _namespace_of(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    """``command`` run as a new pid namespace's first process; that namespace (``pid:[N]``)."""
    proc = subprocess.Popen([namespaced.unshare(), "--pid", "--fork", "--kill-child", *command],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()  # type: ignore[union-attr]
    assert line.startswith("pid:["), line
    return proc, line


def test_an_ordinary_users_sweep_tells_an_ended_namespace_from_a_live_one() -> None:
    user = unprivileged_user()
    show_and_stay = ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups",
                     "sh", "-c", "readlink /proc/self/ns/pid; exec sleep 120"]
    live, live_ns = _namespace_of(show_and_stay)  # a run of this user's still in its namespace
    try:
        ended, ended_ns = _namespace_of(["sh", "-c", "readlink /proc/self/ns/pid"])  # a run killed: it is over
        ended.communicate(timeout=30)
        labels = {LABEL: "1", LABEL_HOSTNAME: socket.gethostname(), LABEL_HOST_PID: "1", LABEL_HOST_START: "1.0"}
        judged = user.run(f"import sys; sys.argv[1:] = [{json.dumps(json.dumps([labels, {'live': live_ns, 'ended': ended_ns}]))}]\n"
                          + JUDGE)
    finally:  # (its first process, changing its user, lost --kill-child's signal: ended by its pid here)
        for first in psutil.Process(live.pid).children():
            first.kill()
        live.kill()
        live.communicate(timeout=30)
    if judged.returncode != 0:
        pytest.fail(judged.stderr[-2000:])
    seen = json.loads(judged.stdout)
    assert seen["live"] == ["namespace", False], seen  # never judged from here
    assert seen["ended"] == ["gone", True], seen  # its containers go (it said "namespace", False: kept for good)
