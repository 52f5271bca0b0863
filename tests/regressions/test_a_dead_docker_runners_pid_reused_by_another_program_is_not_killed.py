"""Seen (handed case B29 on docker, s20): a docker kernel whose runner's session was killed from
outside (``kill -9``, the OOM killer) while its container ran on, and whose runner pid another
program of the kernel's user then took as the leader of its own session (pids wrap in the
container's pid namespace: ``pid_max`` is 32768 on many hosts, and a shared container forks for
every cell and probe), had that program's whole session SIGKILLed by its ``shutdown()`` (spawn
path: shutdown said ``unreachable``, "killed from outside through the transport"; server path:
``already-exited``) and by the transport's ``kill``, the last rung of a shutdown and what its
cleanup runs: the kill script was told only the pid, where the ssh transport's is told the
kernel's id too. And its next cell took that program for its runner: it waited its
``reconnect_timeout`` (10.4 s with the default 10 s) re-attaching, then came back ``died`` with
"runner still alive; killed" (spawn path; the server path's re-attach looked by exec too).

Now the kill script is given ``--kernel ID`` and the exec probe of a runner is ssh's alive-or-end
probe with the id (:mod:`pytest_hermes_kernel.transports.runner_identity`: every docker runner
carries ``HERMES_KERNEL_ID`` on both paths), both run as the kernel's user (docker's root cannot
read that user's environ). The
decoy is put on exactly the freed pid from the host: ``ns_last_pid`` of the container's pid
namespace, written from a process ``nsenter`` put in it (root on a local engine; else skipped).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from pytest_hermes_kernel.contract._probes import wait_until
from pytest_hermes_kernel.transports.detached import KILL_SESSION_SCRIPT
from pytest_hermes_kernel.transports.docker.transport import DockerTransport, container_owner

pytestmark = pytest.mark.usefixtures("docker_ready")

#: Seconds for the killed runner's pid to be free (reaped by its parent) and for a decoy's start.
SETTLE_S = 30.0
#: The kernel's ``reconnect_timeout``: the old code's next cell waited it out, re-attaching to the
#: program on the pid it took for the runner (10.4 s with the default 10 s), then said "runner still alive; killed".
RECONNECT_S = 60.0

#: argv: pid, uid, gid. Run in the container's pid namespace as root: a ``sleep 600`` of that
#: user leading its own session on exactly that pid (a fork may take it first: tried again); prints its pid.
DECOY = r"""
import os, subprocess, sys
pid, uid, gid = map(int, sys.argv[1:4])
for _ in range(20):
    with open('/proc/sys/kernel/ns_last_pid', 'w') as fh:
        fh.write(str(pid - 1))
    decoy = subprocess.Popen(['sleep', '600'], start_new_session=True, user=uid, group=gid, extra_groups=[],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if decoy.pid == pid:
        print(decoy.pid, flush=True)
        os._exit(0)
    decoy.kill()
    decoy.wait()
sys.exit('pid %d was taken each time before the decoy' % pid)
"""


def _running(transport: DockerTransport, cid: str, pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process in the container."""
    code, out, _ = transport._run(cid, ["sh", "-c", f"cat /proc/{pid}/stat"])
    return code == 0 and out.rsplit(b")", 1)[1].split()[0] != b"Z"


def _decoy_on(transport: DockerTransport, cid: str, pid: int) -> None:
    """Start a program of the kernel's user in the container leading a session on ``pid``, freed now."""
    host_pid = transport.api.inspect_container(cid)["State"]["Pid"]
    if os.geteuid() != 0 or shutil.which("nsenter") is None or not os.path.exists(f"/proc/{host_pid}/ns/pid"):
        pytest.skip("needs root on the docker engine's host, and nsenter, to put a process on a chosen pid")
    uid, gid = container_owner(transport, cid)
    wait_until(lambda: not _running(transport, cid, pid) and transport._run(cid, ["test", "-e", f"/proc/{pid}"])[0] != 0,
               SETTLE_S, what=f"pid {pid} to be free in the container")
    made = subprocess.run(["nsenter", "-t", str(host_pid), "-p", "--", sys.executable, "-I", "-c", DECOY, str(pid),
                           str(uid), str(gid)], capture_output=True, text=True, timeout=SETTLE_S)
    assert made.returncode == 0 and made.stdout.strip() == str(pid), made.stdout + made.stderr


@pytest.mark.parametrize("use", ["shutdown", "kill", "execute"])
def test_a_dead_runners_pid_leading_another_programs_session_is_left_alone(own_docker, start, use):
    kernel = start(own_docker, reconnect_timeout=RECONNECT_S)
    assert kernel.execute("x = 1").status == "ok"
    cid, pid = kernel.launched.extra["container"], kernel.runner_pid
    code, out = own_docker.run_script(cid, KILL_SESSION_SCRIPT, str(pid))  # kill -9 from outside, as root
    assert (code, out.strip()) == (0, b"gone"), out
    _decoy_on(own_docker, cid, pid)

    if use == "kill":
        assert own_docker.kill(kernel.launched), "the kill of a runner that is gone did not say so"
    elif use == "execute":
        lost = kernel.execute("x")
        assert lost.status == "died" and lost.kernel.state_lost, lost.summary()
        # seen gone at once, not re-attached to for its reconnect_timeout (nor "still alive": another program)
        note = lost.kernel.note
        assert f"no re-attach: the kernel runner (pid {pid})" in note and "still alive" not in note, note
    info = kernel.shutdown()

    assert _running(own_docker, cid, pid), f"the {use} of a dead kernel killed the program that got its runner's pid"
    assert info.step in ("already-exited", "unreachable"), info
