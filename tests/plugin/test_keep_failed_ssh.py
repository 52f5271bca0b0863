"""--hermes-keep-failed on ssh: a failed test's kernel and the sshd container outlive pytest (issue 12, point 2).

As on docker (``test_keep_failed_docker.py``, whose fixture and helpers this file shares): pytest
runs in a subprocess with ``--hermes-transport=ssh`` and exits, then the CLI reaches the kept
kernel over ssh from what its record says (the sshd container's 127.0.0.1 port, its pinned host
key, a copy of the run's private key beside the record), on the kernel-server and the spawn path.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.lifecycle import SSH_USER
from tests.plugin.test_keep_failed import hermes, records
from tests.plugin.test_keep_failed_docker import (Kept, failing, kernel_processes, leak_beside_a_kept_kernel,
                                                 run_containers, running, sweep_with_another_tmpdir,
                                                 wait_removed_by_another_sweep)
from tests.plugin.test_keep_failed_docker import kept_docker as kept_ssh  # noqa: F401 - a fixture
from tests.support import stays_true, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

def run_ssh(run, kept: Kept, *args: str) -> pytest.RunResult:  # noqa: ANN001 - the plugin conftest's fixture
    return run("--hermes-transport=ssh", f"--hermes-run-id={kept.run_id}", *args)


def kept_files(kept: Kept) -> list[str]:
    root = kept.tmp / f"pytest-hermes-kernel-{os.getuid()}" / "kept"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


@pytest.mark.parametrize("path", ["server", "spawn"])
def test_a_failed_tests_ssh_kernel_and_its_sshd_outlive_pytest(pytester, run, kept_ssh, path):
    pytester.makepyfile(test_keep=failing(path))

    result = run_ssh(run, kept_ssh, "--hermes-keep-failed", "--hermes-leak-check=error")

    result.assert_outcomes(failed=1)
    kid = json.loads(Path(pytester.path, "kernel.json").read_text())["id"]
    result.stdout.fnmatch_lines([
        f"kept for post-mortem: test_keep.py::test_fails[[]ssh[]]: kernel {kid} on ssh (worker pid *",
        f"    *hermes-kernel exec {kid} *",  # (by its path when the PATH lacks it: test_keep_failed.py)
    ])
    assert "leaked" not in result.stdout.str() and "LeakError" not in result.stdout.str(), result.stdout.str()
    locator = kept_ssh.record(kid)["locator"]
    cid, key = locator["container_id"], locator["reach"]["key_filename"]
    assert locator["reach"]["target"].startswith("hermes@127.0.0.1:"), locator
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and Path(key).parent == Path(kept_ssh.tmp, *Path(key).parts[-3:-1])
    assert list(run_containers(kept_ssh.run_id)) == [cid], "only the kept kernel's sshd container outlives the run"
    assert stays_true(lambda: running(cid) and bool(kernel_processes(cid, kid, user=SSH_USER)), 1.0), \
        "the kept kernel and its sshd container must outlive the pytest process"

    ls = hermes("ls")
    line = next((x for x in ls.stdout.splitlines() if x.startswith(kid)), "")
    assert line.split()[1] == "ssh" and " yes " in line, ls.stdout + ls.stderr
    shown = hermes("exec", kid, "evidence")
    assert (shown.returncode, shown.stdout) == (0, "'what went wrong'\n"), shown.stderr
    console = hermes("attach", kid[:8], stdin="n = len(evidence)\nprint('n is', n)\n")
    assert (console.returncode, console.stdout) == (0, "n is 15\n"), console.stderr
    assert hermes("exec", kid, "n").stdout == "15\n"  # state kept across attaches

    swept = hermes("sweep", "--kept")
    assert f"removed kept kernel {kid}" in swept.stdout, swept.stdout + swept.stderr
    if f"removed container {cid[:12]}" not in swept.stdout:
        wait_removed_by_another_sweep(kept_ssh.run_id, cid, swept.stdout)
    wait_until(lambda: not running(cid), 10.0, what=f"the kept kernel's sshd container {cid[:12]} to go")
    assert run_containers(kept_ssh.run_id) == {} and records(kept_ssh.tmp) == []
    assert kept_files(kept_ssh) == [], "the private key copy goes with the record"
    assert hermes("exec", kid, "evidence").returncode == 2


def test_a_passing_ssh_test_keeps_nothing(pytester, run, kept_ssh):
    pytester.makepyfile(test_keep=failing("server").replace('assert False, "deliberate failure"', "pass"))

    result = run_ssh(run, kept_ssh, "--hermes-keep-failed")

    result.assert_outcomes(passed=1)
    assert "kept for post-mortem" not in result.stdout.str() and kept_files(kept_ssh) == []
    assert run_containers(kept_ssh.run_id) == {}, "the run's sshd container went with the run"


def test_the_leak_check_still_catches_a_real_leak_beside_a_kept_ssh_kernel(pytester, run, kept_ssh):
    kid = leak_beside_a_kept_kernel(pytester, lambda *a: run_ssh(run, kept_ssh, *a), "spawn", 302)
    assert hermes("exec", kid, "evidence").stdout == "'what went wrong'\n"


def test_a_later_ssh_runs_start_up_sweep_leaves_an_unexpired_kept_sshd_alone(pytester, run, kept_ssh, tmp_path):
    pytester.makepyfile(test_keep=failing("spawn"))
    run_ssh(run, kept_ssh, "--hermes-keep-failed").assert_outcomes(failed=1)
    kid = json.loads(Path(pytester.path, "kernel.json").read_text())["id"]
    cid = kept_ssh.record(kid)["locator"]["container_id"]

    elsewhere = sweep_with_another_tmpdir(tmp_path)  # no record there: the container's label says where they are
    first_run = kept_ssh.run_id
    kept_ssh.next_run()
    pytester.makepyfile(test_keep="def test_uses_ssh(hermes_kernel):\n    assert hermes_kernel.execute('1').ok\n")
    run_ssh(run, kept_ssh).assert_outcomes(passed=1)  # its start-up sweep runs too

    assert elsewhere.returncode == 0 and cid[:12] not in elsewhere.stdout, elsewhere.stdout + elsewhere.stderr
    assert running(cid) and hermes("exec", kid, "evidence").stdout == "'what went wrong'\n"
    assert run_containers(kept_ssh.run_id) == {}, "the later run removed its own sshd container"
    assert list(run_containers(first_run)) == [cid]


def test_a_kept_kernel_that_cannot_be_reached_keeps_its_record_and_says_so(pytester, run, kept_ssh):
    pytester.makepyfile(test_keep=failing("spawn"))
    run_ssh(run, kept_ssh, "--hermes-keep-failed").assert_outcomes(failed=1)
    kid = json.loads(Path(pytester.path, "kernel.json").read_text())["id"]
    locator = kept_ssh.record(kid)["locator"]
    os.unlink(locator["reach"]["key_filename"])  # the key copy lost: the host can no longer be logged into

    ls = hermes("ls")
    swept = hermes("sweep", "--kept")

    line = next((x for x in ls.stdout.splitlines() if x.startswith(kid)), "")
    assert ls.returncode == 0 and " ? " in line, ls.stdout + ls.stderr  # cannot tell, never "no"
    assert swept.returncode == 1 and f"could not end kept kernel {kid} (ssh)" in swept.stdout, swept.stdout + swept.stderr
    assert "its record is kept" in swept.stdout and records(kept_ssh.tmp) == [kid]
    assert kernel_processes(locator["container_id"], kid, user=SSH_USER), "the kernel still runs: its record must stay"


def test_asking_a_locator_writes_nothing_and_only_keeping_copies_the_key():
    """The locator is asked for often (leak probes, the host harness, contract probes): only the
    locator recorded for a kept kernel copies the run's key, beside the record, removed with it."""
    from pytest_hermes_kernel import KernelHandle
    from pytest_hermes_kernel.containers.kept import remove
    from pytest_hermes_kernel.containers.rundir import kept_dir
    from pytest_hermes_kernel.transports import make_transport

    transport = make_transport("ssh")
    kernel = KernelHandle(transport).start()
    try:
        before = sorted(os.listdir(kept_dir()))
        for _ in range(3):
            assert transport.locator(kernel.launched)["reach"]["key_filename"] != ""
        assert sorted(os.listdir(kept_dir())) == before, "locator() must not write anything"

        kept = transport.kept_locator(kernel.launched)
        copy = Path(kept["reach"]["key_filename"])
        assert copy.parent == Path(kept_dir()) and copy.name == f"{kernel.kernel_id}.ssh-key"
        assert stat.S_IMODE(copy.stat().st_mode) == 0o600
        remove(kernel.kernel_id)
        assert sorted(os.listdir(kept_dir())) == before
    finally:
        kernel.shutdown()
        transport.close()
