"""Every fault marker on every transport of the matrix it applies to, with its outcome and bound.

These tests use the plugin's own fixtures, so ``--hermes-transport=local,docker,ssh,filecell``
runs each of them once per transport; a fault that does not apply to a transport skips with the
reason (transport_drop on local and filecell).
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel.contract._probes import process_of, run_in_thread, wait_until
from pytest_hermes_kernel.errors import ConfigError
from pytest_hermes_kernel.kernel import cell
from pytest_hermes_kernel.faults.harness import HostGoneError

HOG = "hog = []\nwhile True: hog.append(b'x' * (32 * 2**20))"


@pytest.mark.hermes_kernel(orphan_timeout=1.0)
@pytest.mark.hermes_host_sigkill(during_cell=2, delay=0.5)
def test_host_sigkill_mid_cell_ends_the_kernel(hermes_kernel) -> None:
    """Handed case B01 (and B25(b)/B26 step 3 remote): the kernel dies with its host, mid-cell.

    The plugin checks after the test that every process of the kernel is gone within the
    transport's bound (local 2 s; remote orphan_timeout + 3 s) and fails with the survivors.
    A 1-s orphan timer: the wait for it is what the test pays on docker and ssh.
    """
    assert hermes_kernel.execute("import os; x = 1; os.getpid()").status == "ok"
    started = time.monotonic()
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("import time; time.sleep(120)")
    assert time.monotonic() - started < 10, "the host's death must end the cell at once"


@pytest.mark.hermes_host_sigkill(during_cell=2, delay=0.5)
def test_host_sigkill_marker_alone_sets_what_it_needs(hermes_kernel) -> None:
    """The README's example, as written: no orphan_timeout of its own. On docker and ssh the
    marker gives the detached runner a short orphan timer, so the check runs instead of
    skipping, and the plugin still checks the kernel is gone within the bound."""
    assert hermes_kernel.execute("x = 1; x").value == "1"
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("import time; time.sleep(30)")


@pytest.mark.hermes_kernel(orphan_timeout=1.0)
@pytest.mark.hermes_host_sigkill(after_cell=1)
def test_host_sigkill_between_cells_ends_the_kernel(hermes_kernel) -> None:
    assert hermes_kernel.execute("y = 2").status == "ok"
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("y")


@pytest.mark.hermes_kernel_sigkill(after_cell=1)
def test_kernel_sigkill_between_cells_is_reported(hermes_kernel) -> None:
    """Handed case B20(b): the death is reported on the next cell, which runs on a new generation."""
    hermes_kernel.execute("x = 1")
    r = hermes_kernel.execute("x")
    assert r.ename == "NameError"
    assert r.kernel.state_lost and r.kernel.reason == "died" and r.kernel.signal == 9
    assert not r.kernel.oom_killed
    assert r.kernel.generation == 1


@pytest.mark.hermes_kernel_sigkill(during_cell=2, delay=0.5)
def test_kernel_sigkill_mid_cell_is_a_death_not_a_timeout(hermes_kernel) -> None:
    hermes_kernel.execute("x = 1")
    started = time.monotonic()
    r = hermes_kernel.execute("import time; time.sleep(60)", timeout=30)
    assert r.status == "died" and r.kernel.reason == "died" and r.kernel.signal == 9, r.summary()
    # a death missed ends at the cell's 30-s timeout as "timeout"; seen, it is at once: a third of that
    assert time.monotonic() - started < 10, "a death must be seen at once, not at the cell timeout"
    assert hermes_kernel.execute("1 + 1").value == "2"


@pytest.mark.hermes_oom(limit_bytes=256 * 2**20)
def test_oom_is_reported_as_oom(hermes_kernel) -> None:
    """Handed cases B05 and B06: reason oom_killed from the cgroup counter; a plain SIGKILL is not OOM."""
    hermes_kernel.execute("a = 1")
    r = hermes_kernel.execute(HOG, timeout=120)
    assert r.status == "died", r.summary()
    assert r.kernel.reason == "oom_killed" and r.kernel.oom_killed and r.kernel.signal == 9, r.summary()
    after = hermes_kernel.execute("a")
    assert after.ename == "NameError" and after.kernel.state_lost and after.kernel.reason == "oom_killed"
    control = hermes_kernel.execute("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert control.status == "died" and control.kernel.reason == "died" and not control.kernel.oom_killed
    assert hermes_kernel.execute("21 * 2").value == "42", "the same host stays usable"


@pytest.mark.hermes_oom(limit_bytes=256 * 2**20)
def test_a_childs_oom_kill_is_not_blamed_for_the_next_cells_death(hermes_kernel) -> None:
    """The memory cgroup counts the OOM kill of a cell's child; a SIGKILL of the worker in the
    next cell, at once after, is a plain death: the count at that cell's start already holds the
    child's kill (a count kept from an earlier cell called it ``oom_killed``)."""
    child = hermes_kernel.execute(f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {HOG!r}]).returncode",
                                  timeout=120)
    assert child.status == "ok" and child.value == "-9" and not child.kernel.state_lost, child.summary()
    r = hermes_kernel.execute("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert r.status == "died" and r.kernel.reason == "died" and not r.kernel.oom_killed, r.summary()


@pytest.mark.hermes_transport_drop("reset", after_cell=1)
def test_reset_while_idle_reconnects_with_state(hermes_kernel) -> None:
    hermes_kernel.execute("x = 41")
    r = hermes_kernel.execute("x + 1")
    assert r.value == "42" and not r.kernel.state_lost and r.kernel.reconnected, r.summary()


@pytest.mark.hermes_transport_drop("reset", during_cell=2, delay=0.5)
def test_reset_mid_cell_delivers_the_result_after_reconnect(hermes_kernel) -> None:
    hermes_kernel.execute("x = 41")
    r = hermes_kernel.execute("import time; time.sleep(1.5); x + 1", timeout=30)
    assert r.status == "ok" and r.value == "42" and r.kernel.reconnected, r.summary()


@pytest.mark.hermes_kernel(keepalive_interval=1.0, keepalive_missed=3)
@pytest.mark.hermes_transport_drop("blackhole", during_cell=2, delay=0.5, duration=2.0)
def test_short_blackhole_is_survived(hermes_kernel) -> None:
    """A silent spell shorter than the keepalive bound: the cell completes, nothing is lost."""
    hermes_kernel.execute("x = 1")
    r = hermes_kernel.execute("import time; time.sleep(3); x", timeout=30)
    assert r.status == "ok" and r.value == "1", r.summary()


@pytest.mark.hermes_kernel(keepalive_interval=1.0, keepalive_missed=3, orphan_timeout=6.0)
@pytest.mark.hermes_transport_drop("blackhole", during_cell=2, delay=0.5)
def test_lasting_blackhole_is_detected_within_the_keepalive_bound(hermes_kernel) -> None:
    """Handed case B23: a silent peer is detected by keepalives with replies, never a hang. On ssh
    the TCP link itself is black-holed (fault proxy): transport_lost; on docker only the stream is
    silenced: it is re-attached and the runner's state is still there."""
    hermes_kernel.execute("x = 1")
    started = time.monotonic()
    r = hermes_kernel.execute("import time; time.sleep(5); x", timeout=60)  # past the silence's 3.5 s
    # the contract: 3 missed 1-s keepalives, then the re-attach's reconnect_timeout (10 s), beside the
    # cell's 5-s sleep; 10 s of slack for a loaded host (a silence missed ends at the 60-s timeout)
    assert time.monotonic() - started < 1.0 * 3 + 10 + 5 + 10, "detection must stay within the keepalive bound"
    if hermes_kernel.transport.name == "ssh":
        # B23: the TCP link to sshd stays silent (fault proxy), so no re-attach can succeed
        assert r.status == "died" and r.kernel.reason == "transport_lost", r.summary()
    else:  # only the stream was silenced: the runner kept its state and the stream re-attaches
        assert r.status == "ok" and r.value == "1" and r.kernel.reconnected, r.summary()


@pytest.mark.hermes_transport_drop("latency", after_cell=1, latency=0.05, duration=3.0)
def test_latency_slows_but_keeps_everything(hermes_kernel) -> None:
    hermes_kernel.execute("x = 1")
    r = hermes_kernel.execute("x")
    assert r.value == "1" and not r.kernel.state_lost


def test_faults_fixture_kernel_sigkill(hermes_kernel, hermes_faults) -> None:
    hermes_kernel.execute("x = 1")
    hermes_faults.kernel_sigkill(hermes_kernel)
    r = hermes_kernel.execute("x")
    assert r.kernel.state_lost and r.kernel.reason == "died" and r.kernel.signal == 9


def test_faults_fixture_transport_drop_reconnects_with_state(hermes_kernel, hermes_faults) -> None:
    """A drop without a marker: a test with ``hermes_faults`` gets kernels whose transport can be
    dropped where drops apply (docker, ssh); elsewhere the drop is refused with the reason."""
    hermes_kernel.execute("x = 41")
    if not hermes_kernel.transport.reattachable:
        with pytest.raises(ConfigError, match="does not apply"):
            hermes_faults.transport_drop(hermes_kernel, "reset")
        return
    hermes_faults.transport_drop(hermes_kernel, "reset")
    r = hermes_kernel.execute("x + 1")
    assert r.value == "42" and not r.kernel.state_lost and r.kernel.reconnected, r.summary()


@pytest.mark.hermes_kernel(orphan_timeout=1.0)  # not the marker's 5 s: fired, it is waited for
@pytest.mark.hermes_host_sigkill()
def test_a_host_sigkill_marker_without_a_trigger_is_fired_by_the_faults_fixture(hermes_kernel, hermes_faults) -> None:
    """README: a fault marker without a trigger is the test's to fire with ``hermes_faults``; for
    ``hermes_host_sigkill`` that raised ``ConfigError: ... is this process. Hint: use the
    hermes_host_sigkill marker``, the marker the test had (its kernel is the marker's wrapper)."""
    assert hermes_kernel.execute("x = 1; x").value == "1"
    assert hermes_faults.host_sigkill(hermes_kernel, bound=10.0) == []
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("x")


def test_faults_fixture_host_harness(hermes_faults) -> None:
    """The harness names its transport itself (no matrix leg: a hermes_transports marker here
    would do nothing, and the marker check says so)."""
    kernel = hermes_faults.harness("local")
    assert kernel.execute("import os; os.getpid()").value == str(kernel.pid)
    survivors = hermes_faults.host_sigkill(kernel, bound=2.0)
    assert survivors == []


def test_a_link_that_drops_after_every_re_attach_ends_the_cell_at_the_cap(hermes_kernel, hermes_faults,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell re-attaches each time its stream drops (a second drop in one cell is no loss), but a
    link that drops again after every re-attach ends the cell ``transport_lost`` once the cell has
    made ``MAX_REATTACHES_PER_CELL`` of them, the note saying so: never a re-attach loop."""
    if not hermes_kernel.transport.reattachable:
        pytest.skip(f"the {hermes_kernel.transport.name} transport declares no re-attach")
    monkeypatch.setattr(cell, "MAX_REATTACHES_PER_CELL", 3)
    link = hermes_kernel._runtime.require_link()
    reattach, made = link.reattach, []

    def dropped_again(*args, **kwargs):
        hello = reattach(*args, **kwargs)
        if hello is not None:
            made.append(hello)
            hermes_faults.transport_drop(hermes_kernel, "reset")  # the new stream drops at once
        return hello

    monkeypatch.setattr(link, "reattach", dropped_again)
    fut = run_in_thread(hermes_kernel, "import subprocess\nsubprocess.run(['sleep', '30'])", timeout=60)
    wait_until(lambda: process_of(hermes_kernel, "sleep 30"), 10.0, what="the cell's sleep to run")
    hermes_faults.transport_drop(hermes_kernel, "reset")
    r = fut.result(timeout=60)

    assert r.status == "died" and r.kernel.reason == "transport_lost", r.summary()
    assert len(made) == 3 and "(after 3 re-attaches in this cell)" in r.kernel.note, r.summary()
    # the result says the runner was killed: the cell must not run on behind a "died" (it did,
    # until the next cell or the shutdown discarded the runner)
    assert "(runner still alive; killed)" in r.kernel.note, r.summary()
    wait_until(lambda: not process_of(hermes_kernel, "sleep 30"), 5.0, what="the given-up cell's sleep to end")
