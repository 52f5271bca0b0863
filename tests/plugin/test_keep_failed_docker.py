"""--hermes-keep-failed on docker: a failed test's kernel and its container outlive pytest (issue 12, point 2).

As in ``test_keep_failed.py``: pytest runs in a subprocess with ``--hermes-transport=docker``
and exits, then the CLI (``hermes-kernel ls``, ``exec``, ``attach``, ``sweep --kept``) runs in
subprocesses, each with ``TMPDIR`` on the test's private directory (its kept records and run
files are the test's alone). The kept kernel runs in the run's shared container (kernel-server
and spawn paths) or a fresh one; the finalizer sweeps what was kept and removes, by id, every
container the inner run made, pass or fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.labels import LABEL, LABEL_RUN_ID
from tests.plugin.test_keep_failed import FAILING_TEST, LEAK_GRACE, hermes, records
from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS, container_output, run_leftovers, stays_true, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: The marker of each docker path: the run's shared container (kernel server, spawn), a fresh one.
PATHS = {"server": "", "spawn": "@pytest.mark.hermes_kernel(server=False)\n",
         "fresh": '@pytest.mark.hermes_kernel(container="fresh")\n'}


def _client():  # noqa: ANN202 - docker-py is imported lazily
    import docker

    return docker.from_env()


def run_containers(run_id: str) -> dict[str, str]:
    """``{id: state}`` of the containers labelled with the run id ``run_id`` (on this engine)."""
    client = _client()
    try:
        found = client.api.containers(all=True, filters={"label": [f"{LABEL}=1", f"{LABEL_RUN_ID}={run_id}"]})
        return {c["Id"]: c.get("State", "?") for c in found}
    finally:
        client.close()


def running(container_id: str) -> bool:
    import docker

    client = _client()
    try:
        return bool(client.api.inspect_container(container_id)["State"]["Running"])
    except docker.errors.NotFound:
        return False
    finally:
        client.close()


def kernel_processes(container_id: str, kernel_id: str, user: str = "") -> list[str]:
    """Pids in the container whose environment carries the kernel's id (read as the kernel's
    user: the image's, or ``user``); none once the container is gone or stopped (a parallel
    test's sweep may remove it as soon as the kernel expired)."""
    import docker

    script = ("import os,sys\nfor p in os.listdir('/proc'):\n if p.isdigit():\n  try: e=open(f'/proc/{p}/environ','rb').read()\n"
              "  except OSError: continue\n  if b'HERMES_KERNEL_ID='+sys.argv[1].encode()+b'\\0' in e+b'\\0': print(p)")
    client = _client()
    try:
        return container_output(client, container_id, ["python3", "-c", script, kernel_id], user=user).split()
    except docker.errors.NotFound:
        return []
    except docker.errors.APIError:  # 409: not running (stopping, stopped); 500: "not running: Removal In Progress"
        if not running(container_id):
            return []
        raise
    finally:
        client.close()


def container_ends(container_id: str, since: float) -> list[tuple[str, float]]:
    """``(action, when)`` of each ``die`` and ``destroy`` docker event of ``container_id`` from
    ``since`` on (epoch seconds, the daemon's clock: this host's)."""
    client = _client()
    try:
        events = client.events(since=int(since) - 1, until=int(time.time()) + 1, decode=True,
                               filters={"container": container_id, "event": ["die", "destroy"]})
        return [(e["Action"], e["timeNano"] / 1e9) for e in events if e["timeNano"] / 1e9 >= since]
    finally:
        client.close()


def wait_removed_by_another_sweep(run_id: str, cid: str, output: str) -> None:
    """Once its kept kernel ended, a container is a dead run's: ``sweep --kept`` removes it next,
    unless a parallel test's sweep (any docker use starts one) came first. Then that one removes
    it within a bound; a container nobody removes still fails here."""
    wait_until(lambda: not run_containers(run_id), 10.0,
               what=f"container {cid[:12]}, not removed by this sweep ({output!r}), to be removed by another")


class Kept:
    """One inner run's facts: its run id, the kept record (read from its 0600 file), the tmp dir."""

    def __init__(self, tmp: Path, run_id: str) -> None:
        self.tmp, self.run_id = tmp, run_id
        self.run_ids = [run_id]  # every run's containers are removed afterwards

    def next_run(self) -> None:
        """The next inner run gets a run id of its own."""
        self.run_id = f"{self.run_ids[0]}-{len(self.run_ids)}"
        self.run_ids.append(self.run_id)

    def record(self, kernel_id: str) -> dict:
        path = self.tmp / f"pytest-hermes-kernel-{os.getuid()}" / "kept" / f"{kernel_id}.json"
        return json.loads(path.read_text())


@pytest.fixture
def kept_docker(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kept]:
    """A private ``TMPDIR`` and run id for the inner run and the CLI; afterwards what was kept is
    swept and every container of the run is removed by id."""
    import tempfile

    from pytest_hermes_kernel.containers.lifecycle import remove_container

    tmp = Path(tempfile.mkdtemp(prefix="hk-", dir="/tmp"))
    run_id = f"keepdocker-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.delenv("PYTEST_HERMES_KERNEL_DIR", raising=False)
    found = Kept(tmp, run_id)
    try:
        yield found
    finally:
        hermes("sweep", "--kept")
        for cid in [c for rid in found.run_ids for c in run_containers(rid)]:
            remove_container(cid)
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


def sweep_with_another_tmpdir(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``hermes-kernel sweep containers`` then ``sweep --dry-run kernel-processes`` (see
    :data:`~tests.plugin.test_keep_failed.ORPHAN_SWEEP_IS_MACHINE_WIDE`) as a user whose ``TMPDIR``
    is another one: their return code (the worse) and output, together."""
    other = tmp_path / "other-tmp"
    other.mkdir(mode=0o700)
    runs = [subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", *args],
                           capture_output=True, text=True, timeout=60, env={**os.environ, "TMPDIR": str(other)},
                           stdin=subprocess.DEVNULL)
            for args in (["containers"], ["--dry-run", "kernel-processes"])]
    return subprocess.CompletedProcess(runs[0].args, max(r.returncode for r in runs),
                                       "".join(r.stdout for r in runs), "".join(r.stderr for r in runs))


def run_docker(run, kept: Kept, *args: str) -> pytest.RunResult:  # noqa: ANN001 - the plugin conftest's fixture
    return run("--hermes-transport=docker", f"--hermes-run-id={kept.run_id}", *args)


def failing(path: str) -> str:
    return FAILING_TEST.replace("def test_fails", f"{PATHS[path]}def test_fails").replace(
        "from pathlib import Path", "from pathlib import Path\nimport pytest")


@pytest.mark.parametrize("path", list(PATHS))
def test_a_failed_tests_docker_kernel_and_container_outlive_pytest(pytester, run, kept_docker, path):
    pytester.makepyfile(test_keep=failing(path))

    result = run_docker(run, kept_docker, "--hermes-keep-failed", "--hermes-leak-check=error")

    result.assert_outcomes(failed=1)
    kid = json.loads(Path(pytester.path, "kernel.json").read_text())["id"]
    result.stdout.fnmatch_lines([
        f"kept for post-mortem: test_keep.py::test_fails[[]docker[]]: kernel {kid} on docker (worker pid *",
        f"    *hermes-kernel exec {kid} *",
        f"    *hermes-kernel sweep --kept --kernel {kid} *",
    ])
    assert "leaked" not in result.stdout.str() and "LeakError" not in result.stdout.str(), result.stdout.str()
    cid = kept_docker.record(kid)["locator"]["container_id"]
    result.stdout.fnmatch_lines([f"    docker exec -it {cid[:12]} sh    a shell in its container *"])
    assert list(run_containers(kept_docker.run_id)) == [cid], "only the kept kernel's container outlives the run"
    assert stays_true(lambda: running(cid) and bool(kernel_processes(cid, kid)), 1.0), \
        (f"the kept kernel and its container must outlive the pytest process: container running={running(cid)}, "
         f"kernel pids={kernel_processes(cid, kid)}, ls: {hermes('ls').stdout}")

    ls = hermes("ls")
    line = next((x for x in ls.stdout.splitlines() if x.startswith(kid)), "")
    assert line.split()[1:5] == ["docker", "container", "id", cid[:12]] and " yes " in line, ls.stdout + ls.stderr
    shown = hermes("exec", kid, "evidence")
    assert (shown.returncode, shown.stdout) == (0, "'what went wrong'\n"), shown.stderr
    console = hermes("attach", kid[:8], stdin="n = len(evidence)\nprint('n is', n)\n")
    assert (console.returncode, console.stdout) == (0, "n is 15\n"), console.stderr
    assert hermes("exec", kid, "n").stdout == "15\n"  # state kept across attaches

    dry = hermes("sweep", "--kept", "--dry-run")
    assert f"would remove kept kernel {kid}" in dry.stdout and f"would remove container {cid[:12]}" in dry.stdout, \
        dry.stdout + dry.stderr
    assert running(cid) and records(kept_docker.tmp) == [kid], "a dry run removes nothing"
    swept = hermes("sweep", "--kept")
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert f"removed kept kernel {kid}" in swept.stdout, swept.stdout
    if f"removed container {cid[:12]}" not in swept.stdout:
        wait_removed_by_another_sweep(kept_docker.run_id, cid, swept.stdout)
    wait_until(lambda: not running(cid), 10.0, what=f"the kept kernel's container {cid[:12]} to go")
    assert run_containers(kept_docker.run_id) == {} and records(kept_docker.tmp) == []
    assert hermes("exec", kid, "evidence").returncode == 2


def test_a_later_runs_start_up_sweep_leaves_an_unexpired_kept_container_alone(pytester, run, kept_docker, tmp_path):
    pytester.makepyfile(test_keep=failing("server"))
    run_docker(run, kept_docker, "--hermes-keep-failed").assert_outcomes(failed=1)
    kid = json.loads(Path(pytester.path, "kernel.json").read_text())["id"]
    cid = kept_docker.record(kid)["locator"]["container_id"]

    swept = hermes("sweep", "containers", "kept")  # its host is gone, but the kernel is kept
    would_kill = hermes("sweep", "--dry-run", "kernel-processes")  # see ORPHAN_SWEEP_IS_MACHINE_WIDE
    elsewhere = sweep_with_another_tmpdir(tmp_path)  # no record there: the container's label says where they are
    first_run = kept_docker.run_id
    kept_docker.next_run()
    pytester.makepyfile(test_keep="def test_uses_docker(hermes_kernel):\n    assert hermes_kernel.execute('1').ok\n")
    run_docker(run, kept_docker).assert_outcomes(passed=1)  # its start-up sweep runs too

    assert cid[:12] not in swept.stdout and kid not in swept.stdout + would_kill.stdout, swept.stdout
    assert elsewhere.returncode == 0 and cid[:12] not in elsewhere.stdout, elsewhere.stdout + elsewhere.stderr
    assert running(cid) and hermes("exec", kid, "evidence").stdout == "'what went wrong'\n"
    assert run_containers(kept_docker.run_id) == {}, "the later run removed its own container"
    assert list(run_containers(first_run)) == [cid]


def test_a_short_ttl_expires_the_kernel_and_the_next_sweep_removes_its_container(pytester, run, kept_docker):
    pytester.makepyfile(test_keep=failing("spawn"))

    result = run_docker(run, kept_docker, "--hermes-keep-failed", "--hermes-keep-failed-ttl", "2")

    result.assert_outcomes(failed=1)
    kid = json.loads(Path(pytester.path, "kernel.json").read_text())["id"]
    cid = kept_docker.record(kid)["locator"]["container_id"]
    result.stdout.fnmatch_lines([f"kept for post-mortem: * kernel {kid} * it ends by itself 2 s after *"])
    wait_until(lambda: not kernel_processes(cid, kid), 20.0, what=f"kept kernel {kid} to expire")
    # an expired kernel's container stays until the next sweep. In a parallel suite that may be
    # the start-up sweep of another test's pytest run, which can come first: then this one finds
    # it gone (what it must never find is the container gone while the kernel was unexpired: the
    # other tests of this file)

    # the next sweep: here `hermes-kernel sweep`; a later run's start-up sweep (any docker use,
    # `hermes-kernel ls` included) removes it the same way
    swept = hermes("sweep", "containers", "kept")
    assert f"removed kept kernel {kid}" in swept.stdout, swept.stdout
    # the container goes with a sweep once its kernel expired: this one, or a parallel test's that
    # races it (then this one reports nothing); sweeps are repeated for a bounded time
    outputs = [swept.stdout]
    wait_until(lambda: f"removed container {cid[:12]}" in outputs[-1] or not running(cid) or
               bool(outputs.append(hermes("sweep", "containers").stdout)), 20.0, interval=1.0,
               what=f"a sweep to remove the expired kernel's container {cid[:12]}: {outputs}")
    # which sweep removed it is not asserted: a parallel test's sweep can race this one for it
    assert not running(cid) and run_containers(kept_docker.run_id) == {} and records(kept_docker.tmp) == []


def test_a_kept_kernels_container_is_no_leftover_of_its_run_once_its_ttl_ran_out(pytester, kept_docker):
    """The ``run`` fixture's check of what a run left (``tests.support.run_leftovers``) took the
    container of a kept kernel whose 2-s TTL ran out before it looked for a leftover, and removed
    it: the test above failed so under load ("the inner run left (removed now): docker-kernel-host
    container ... (Up 6 seconds)"). The container stays for the next sweep, as the leak probe judges it."""
    pytester.makepyfile(test_keep=failing("spawn"))
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--hermes-transport=docker", f"--hermes-run-id={kept_docker.run_id}",
        "--hermes-keep-failed", "--hermes-keep-failed-ttl", "1", timeout=RUN_TIMEOUT_S)
    result.assert_outcomes(failed=1)
    kid = json.loads(Path(pytester.path, "kernel.json").read_text())["id"]
    wait_until(lambda: time.time() >= (r := kept_docker.record(kid))["detached_at"] + r["ttl_s"], 20.0,
               what=f"kept kernel {kid}'s TTL to run out")

    assert run_leftovers(kept_docker.run_id) == [], "a kept kernel's container is left for the next sweep"


def test_a_passing_docker_test_keeps_nothing(pytester, run, kept_docker):
    pytester.makepyfile(test_keep=failing("server").replace('assert False, "deliberate failure"', "pass"))

    result = run_docker(run, kept_docker, "--hermes-keep-failed")

    result.assert_outcomes(passed=1)
    assert "kept for post-mortem" not in result.stdout.str() and records(kept_docker.tmp) == []
    assert run_containers(kept_docker.run_id) == {}, "the run's container went with the run"


def leak_beside_a_kept_kernel(pytester: pytest.Pytester, run_inner, path: str, sleep_s: int) -> str:  # noqa: ANN001
    """The failed test also leaves a ``sleep sleep_s``: the leak check must name it and not the
    kept kernel; the kept kernel's id."""
    pytester.makepyfile(test_keep=failing(path).replace(
        'assert False, "deliberate failure"',
        f'import subprocess; subprocess.Popen(["sleep", "{sleep_s}"]); assert False, "deliberate failure"'))

    result = run_inner("--hermes-keep-failed", "--hermes-leak-check=error", LEAK_GRACE)

    result.assert_outcomes(failed=1, errors=1)
    kid = json.loads(Path(pytester.path, "kernel.json").read_text())["id"]
    text = result.stdout.str()
    assert f"sleep {sleep_s}" in text and "LeakError" in text, text
    assert kid not in text.split("LeakError", 1)[1].split("\n\n", 1)[0]  # the kept kernel is not named a leak
    return kid


def test_the_leak_check_still_catches_a_real_leak_beside_a_kept_docker_kernel(pytester, run, kept_docker):
    kid = leak_beside_a_kept_kernel(pytester, lambda *a: run_docker(run, kept_docker, *a), "server", 301)
    cid = kept_docker.record(kid)["locator"]["container_id"]
    assert running(cid) and hermes("exec", kid, "evidence").stdout == "'what went wrong'\n"


AFTER_THE_TTL = """

def test_innocent_after_the_ttl(hermes_kernel):
    import time
    from pytest_hermes_kernel.containers import kept
    deadline = time.monotonic() + 30
    while not (kept.load_all() and all(r.expired() for r in kept.load_all())):
        assert time.monotonic() < deadline, "the kept kernel's TTL did not run out"
        time.sleep(0.1)
    assert hermes_kernel.execute("1").value == "1"
"""


def test_a_kept_container_whose_ttl_ran_out_during_the_run_is_no_later_tests_leak(pytester, kept_docker):
    """Found by the breaker session (2026-12-05): once a kept kernel's TTL ran out during the run,
    the record no longer exempted its fresh container, and the next test's leak check reported it
    (``leaked container: ... no live process holds it``: a LeakError on a test that never touched
    it) and removed it. It is the kept kernel's: it stays for the next sweep, as when the TTL runs
    out after the run (so not the ``run`` fixture, which fails a run that leaves a container; the
    finalizer removes it)."""
    pytester.makepyfile(test_keep=failing("fresh") + AFTER_THE_TTL)
    ended = pytester.path / "run-ended"
    pytester.makeconftest(f"import atexit, time\n\n\n@atexit.register  # first registered, last run: the run's "
                          f"last act\ndef ended():\n    open({str(ended)!r}, 'w').write(repr(time.time()))\n")
    began = time.time()

    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--hermes-transport=docker", f"--hermes-run-id={kept_docker.run_id}",
        "--hermes-keep-failed", "--hermes-keep-failed-ttl", "2", "--hermes-leak-check=error", "-p", "no:randomly",
        timeout=RUN_TIMEOUT_S)

    result.assert_outcomes(failed=1, passed=1)
    assert "leaked container" not in result.stdout.str(), result.stdout.str()[-3000:]
    kid = json.loads(Path(pytester.path, "kernel.json").read_text())["id"]
    cid = kept_docker.record(kid)["locator"]["container_id"]
    # left for the next sweep, as after the run. That may be a parallel test's start-up sweep (its
    # TTL ran out, its run is over): then the container is gone, but only after the run ended
    still = running(cid)
    ends, run_end = container_ends(cid, began), float(ended.read_text())
    assert not [e for e in ends if e[1] <= run_end], f"the run ended its kept kernel's container: {ends}, run end {run_end}"
    assert still or ends, f"container {cid[:12]} is neither running nor ended by a sweep after the run"
