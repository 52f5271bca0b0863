"""A cell ran into a paused sshd (``died``, ``transport_lost`` after ~9 s of unanswered
keepalives); what happened right after ``docker unpause``:

* Leaving ``with start_kernel("ssh")`` logged "kill of kernel runner 31 over ssh failed: ssh host
  not answering: no reply to ssh keepalives for 9.0 s" and left the runner and its kernel dir on
  the host until its orphan timer. The kill was a probe, refused at once for the first 3 s of the
  host's silence although the host answered again.
* The next cell started a new runner, but the old runner and its worker ran on, even after
  ``shutdown()``, until their orphan timer (which would then remove the kernel dir the new runner
  lives in: it has the same path). The runner being replaced was killed only if ``alive()`` said
  it runs, and on a host known silent ``alive()`` says ``False`` when it cannot tell; the cleanup
  after it, which reached the host again, removed the dir of a runner still running. On the server
  path the next start could also fall back to a plain spawn with the note "kernel server
  unavailable (... File exists ...)": the old dir was still there.

Both start paths: a runner forked by the host's kernel server, and one spawned by its own execs.
"""

from __future__ import annotations

import shlex

import pytest

from pytest_hermes_kernel import CellResult, KernelHandle, KernelOptions, KernelStartError
from pytest_hermes_kernel.transports.detached import ALIVE_SCRIPT
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import transport_of_its_own, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: own_sshd's keepalives: a pause is noticed after 2 s, not the default 9 s (3 s x 3); the host is
#: silent for that long after it (``Silence.window_s``), so "right after the unpause" is still
#: inside the window in which a probe was refused before the fixes (and inside the 3-s
#: ``SILENT_RETRY_S`` turn a kill shared with the other probes then).
SSHD_OPTIONS = {"keepalive_interval": 1.0, "keepalive_missed": 2}


def _lost_to_a_pause(transport: SshTransport, k: KernelHandle) -> CellResult:
    """Run a cell into the paused sshd, then unpause it: the cell ends ``transport_lost``; its result."""
    api, cid = transport.sshd.docker.api, transport.sshd_container_id
    api.pause(cid)
    try:
        lost = k.execute("2 + 2", timeout=30)
    finally:
        api.unpause(cid)
    assert lost.status == "died" and lost.kernel.reason == "transport_lost", lost.summary()
    return lost


def _running(transport: SshTransport, pid: int) -> bool:
    """Whether ``pid`` runs on the ssh host (a zombie does not)."""
    code, _ = transport.run_script(transport.connection(), ALIVE_SCRIPT, str(pid))
    return code == 0


def test_shutdown_right_after_the_host_answers_again_ends_the_runner(own_sshd, start):
    k = start(own_sshd)
    assert k.execute("x = 1").status == "ok"
    kdir = k.launched.kernel_dir
    _lost_to_a_pause(own_sshd, k)

    info = k.shutdown()  # at once: the host answers again

    assert info.confirmed, info
    wait_until(lambda: own_sshd.kernel_processes(k.kernel_id) == [], 3.0, what="the kernel's processes to end")
    code, _, _ = own_sshd.connection().run(f"test -e {shlex.quote(kdir)}")
    assert code == 1, f"the kernel dir {kdir} is still there"


def test_the_runner_replaced_after_the_host_was_silent_is_ended(own_sshd, start):
    k = start(own_sshd)
    first = k.execute("x = 1; import os; os.getpid()")
    assert first.status == "ok", first.summary()
    old_runner, old_worker = k.runner_pid, int(first.value)
    _lost_to_a_pause(own_sshd, k)

    after = k.execute("1 + 1")  # at once: the host answers again

    assert after.status == "ok" and after.value == "2", after.summary()
    assert after.kernel.state_lost and after.kernel.reason == "transport_lost", after.summary()
    assert "kernel server unavailable" not in after.kernel.note, after.kernel.note
    assert k.runner_pid not in (None, old_runner)
    wait_until(lambda: not _running(own_sshd, old_runner) and not _running(own_sshd, old_worker), 5.0, interval=0.2,
               what=f"the replaced runner {old_runner} and its worker {old_worker} to end")

    info = k.shutdown()

    assert info.confirmed, info
    wait_until(lambda: own_sshd.kernel_processes(k.kernel_id) == [], 5.0, interval=0.2, what="the kernel's processes to end")
    assert not _running(own_sshd, old_runner)


def test_a_kernel_start_into_a_host_gone_silent_says_it_went_silent() -> None:
    """The sshd is paused after the connection was made; a kernel start then fails on it. The
    error says the host stopped answering (its keepalives' note) and asks whether it is paused,
    not "is the host up and the key accepted?" (the host is up, and the key was accepted)."""
    with transport_of_its_own("ssh", server=False, keepalive_interval=1.0, keepalive_missed=2) as transport:
        assert isinstance(transport, SshTransport)
        with KernelHandle(transport, KernelOptions()) as k:  # connected, the key accepted
            assert k.execute("1").value == "1"
        api, cid = transport.sshd.docker.api, transport.sshd_container_id
        api.pause(cid)
        try:
            with pytest.raises(KernelStartError) as refused:
                KernelHandle(transport, KernelOptions()).start()
        finally:
            api.unpause(cid)

    message = str(refused.value)
    assert "no reply to ssh keepalives" in message and "is it paused" in message, message
    assert "key accepted" not in message, message


def test_a_cell_while_the_host_is_still_silent_says_it_may_answer_again(own_sshd, start):
    """A silent host's re-attach failure ("ssh host not answering") was taken for a refusal for good
    (as a changed host key is): the lost cell's note said "no re-attach: ssh host not answering",
    and the next cell's error dropped "is its host paused or unreachable?" and the hint that a later
    cell ends the runner once the host answers again."""
    k = start(own_sshd)
    assert k.execute("x = 1").status == "ok"
    api, cid = own_sshd.sshd.docker.api, own_sshd.sshd_container_id
    api.pause(cid)
    try:
        lost = k.execute("2 + 2", timeout=30)
        with pytest.raises(KernelStartError) as refused:
            k.execute("1 + 1", timeout=30)
    finally:
        api.unpause(cid)

    assert lost.status == "died" and lost.kernel.reason == "transport_lost", lost.summary()
    assert "no re-attach" not in lost.kernel.note, lost.kernel.note
    assert "is its host paused or unreachable?" in str(refused.value), str(refused.value)
    assert "once its host answers again" in str(refused.value), str(refused.value)
