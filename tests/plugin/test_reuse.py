"""``--hermes-reuse`` (issue 12, point 5): warm containers across local runs, opt-in.

Each test runs small suites with ``pytester.runpytest_subprocess`` on real docker (and the ssh
transport's sshd container), each inner test writing the container it used to a facts file.
What a user sees: a run with reuse leaves its containers running and labelled and nothing else
(no run dir, no kernel process, no kernel dir in them), the next run with reuse uses the same
containers, a run without reuse starts and removes its own as before, two runs at once never
share one (the second starts its own: nobody waits), ``hermes-kernel sweep --reused`` removes
them with their records and keys, and a changed image is not reused (the sweep removes it).
The inner runs get their own ``TMPDIR`` (their reuse store and run files) and run ids with this
test's prefix; a finalizer removes every container carrying either, even when a test fails.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.labels import (LABEL, LABEL_IMAGE_ID, LABEL_REUSE, LABEL_REUSE_STORE, LABEL_ROLE,
                                                    LABEL_RUN_ID)
from pytest_hermes_kernel.containers.images import LOCK_NAME
from pytest_hermes_kernel.containers.rundir import runs_root
from tests.plugin.test_keep_failed import LEAK_GRACE
from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS, output_of

INNER = """
import json, os, pathlib, time

import pytest

from pytest_hermes_kernel.containers.sharing import current_run_id

OUT = pathlib.Path(os.environ["REUSE_OUT"])
ASKED = OUT.parent / "asked.json"  # {run name: {"wait_for": other run, "left_pids": {transport: pid}}}
LEFT_DIR = {"docker": "/tmp/hermes-kernels/left-by-an-earlier-run", "ssh": "~/.hermes-kernels/left-by-an-earlier-run"}


def run_name():
    return current_run_id().split("--", 1)[1]


def asked():
    return (json.loads(ASKED.read_text()) if ASKED.exists() else {}).get(run_name(), {})


def write_facts(transport, **more):
    cid = transport.container_id if transport.name == "docker" else transport.sshd_container_id
    facts = {"run": run_name(), "transport": transport.name, "container": cid, **more}
    with OUT.open("a") as fh:
        fh.write(json.dumps(facts) + "\\n")


def test_uses_a_kernel(hermes_kernel, hermes_transport):
    assert hermes_kernel.execute("1 + 1").value == "2"
    pid = asked().get("left_pids", {}).get(hermes_transport.name, 0)
    code = (f"import os\\n({pid} and os.path.exists('/proc/{pid}'), "
            f"os.path.exists(os.path.expanduser({LEFT_DIR[hermes_transport.name]!r})))")
    write_facts(hermes_transport, leftovers=hermes_kernel.execute(code).value)
    other = asked().get("wait_for")
    deadline = time.monotonic() + 60.0
    while other and not any(json.loads(line)["run"] == other for line in OUT.read_text().splitlines()):
        assert time.monotonic() < deadline, "the other run never started a kernel"
        time.sleep(0.05)


@pytest.mark.hermes_allow_leaks("leaves a process and a dir in the kept container for the next run to clear")
def test_leaves_a_process_and_a_dir(hermes_kernel, hermes_transport):
    result = hermes_kernel.execute(
        "import os, subprocess\\n"
        f"os.makedirs(os.path.expanduser({LEFT_DIR[hermes_transport.name]!r}), exist_ok=True)\\n"
        "subprocess.Popen(['sleep', '600'], start_new_session=True).pid")
    write_facts(hermes_transport, left_pid=int(result.value))


@pytest.mark.hermes_kernel(mem_limit_bytes=256 * 1024 * 1024)
def test_own_limits(hermes_kernel, hermes_transport):
    # its own transport (marker options), closed after the test: the last user parks its container
    assert hermes_kernel.execute("2 + 2").value == "4"
    write_facts(hermes_transport, own_limits=True)


def test_leaks_a_process(hermes_kernel):
    hermes_kernel.execute("import subprocess; subprocess.Popen(['sleep', '600'], start_new_session=True)")


def test_crashes_holding_a_kernel(hermes_kernel, hermes_transport):
    write_facts(hermes_transport)
    os._exit(1)


def test_fails_and_is_kept(hermes_kernel, hermes_transport):
    hermes_kernel.execute("kept = 'still here'")
    write_facts(hermes_transport, kept_kernel=hermes_kernel.kernel_id)
    assert False, "keep my kernel"
"""


@dataclass
class Runs:
    """Inner runs of one test: their ``TMPDIR``, facts file and run id prefix."""

    pytester: pytest.Pytester
    tmpdir: Path
    out: Path
    prefix: str
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, name: str, *args: str, select: str = "uses_a_kernel", transports: str = "docker,ssh",
            wait_for: str | None = None, left_pids: dict[str, int] | None = None) -> pytest.RunResult:
        """Run the inner suite as run ``name`` (run id ``<prefix>--<name>``; thread-safe: what
        the run is asked travels in a file keyed by its name, not in the environment)."""
        with self._lock:
            asked = json.loads(self.asked.read_text()) if self.asked.exists() else {}
            asked[name] = {"wait_for": wait_for, "left_pids": left_pids or {}}
            self.asked.write_text(json.dumps(asked))
        return self.pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "-k", select, f"--hermes-transport={transports}",
            "--hermes-require-transports", "--hermes-leak-check=error", f"--hermes-run-id={self.prefix}--{name}",
            *args, timeout=RUN_TIMEOUT_S)

    @property
    def asked(self) -> Path:
        return self.out.parent / "asked.json"

    def facts(self, run: str) -> dict[str, dict[str, object]]:
        """``{transport: facts}`` the inner tests of run ``run`` wrote."""
        lines = self.out.read_text().splitlines() if self.out.exists() else []
        found: dict[str, dict[str, object]] = {}
        for line in lines:
            fact = json.loads(line)
            if fact["run"] == run:
                found.setdefault(str(fact["transport"]), {}).update(fact)
        return found

    def containers(self) -> dict[str, dict[str, str]]:
        """``{id: labels}`` of the containers of this test's runs (by run id prefix or reuse store)."""
        return {cid: labels for cid, labels in _labelled().items()
                if labels.get(LABEL_RUN_ID, "").startswith(self.prefix)
                or labels.get(LABEL_REUSE_STORE, "").startswith(str(self.tmpdir))}

    def leftovers(self) -> list[str]:
        """What the runs left in the per-user directory of their ``TMPDIR`` (besides what is the
        user's, not a run's: the reuse store and the image build lock)."""
        root = Path(runs_root(str(self.tmpdir)))
        return sorted(p.name for p in root.iterdir() if p.name not in ("reuse", LOCK_NAME)) if root.exists() else []

    def store(self) -> list[str]:
        path = Path(runs_root(str(self.tmpdir))) / "reuse"
        return sorted(p.name for p in path.iterdir()) if path.exists() else []


def _labelled() -> dict[str, dict[str, str]]:
    import docker

    client = docker.from_env()
    try:
        return {s["Id"]: s.get("Labels") or {} for s in client.api.containers(all=True, filters={"label": f"{LABEL}=1"})}
    finally:
        client.close()


def _remove(container_ids: list[str]) -> None:
    from pytest_hermes_kernel.containers.lifecycle import remove_container

    for cid in container_ids:
        remove_container(cid)


@pytest.fixture
def runs(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         docker_ready: None) -> Iterator[Runs]:
    pytester.makepyfile(test_inner=INNER)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(mode=0o700)
    out = tmp_path / "facts.jsonl"
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setenv("REUSE_OUT", str(out))
    found = Runs(pytester, tmpdir, out, f"reuse-{uuid.uuid4().hex[:12]}")
    try:
        yield found
    finally:
        _remove(list(found.containers()))


def _eventually(pred: Callable[[], bool], timeout: float) -> bool:
    """``pred`` holds within ``timeout`` seconds (a runner ends a moment after its host left)."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _running(cid: str) -> bool:
    import docker

    client = docker.from_env()
    try:
        return bool(client.api.inspect_container(cid)["State"]["Running"])
    except docker.errors.NotFound:
        return False
    finally:
        client.close()


def _marked_processes(cid: str) -> str:
    """Processes carrying the kit's kernel marker in a container (``pid: cmdline`` lines)."""
    script = ("import os\nfor n in os.listdir('/proc'):\n    try:\n        env = open(f'/proc/{n}/environ', 'rb').read()\n"
              "    except OSError:\n        continue\n    if b'HERMES_KERNEL_ID=' in env:\n        print(n)\n")
    return subprocess.run(["docker", "exec", "-u", "hermes", cid, "python3", "-c", script], capture_output=True,
                          text=True, timeout=60, check=True).stdout.strip()


def _assert_kept(runs: Runs, result: pytest.RunResult, run: str) -> dict[str, str]:
    """Run ``run`` passed and kept exactly its two containers, labelled, empty, and nothing else."""
    assert result.ret == 0, output_of(result)
    ids = {t: str(f["container"]) for t, f in runs.facts(run).items()}
    assert set(ids) == {"docker", "ssh"}, ids
    kept = runs.containers()
    assert set(kept) == set(ids.values()), f"{run} left {sorted(kept)}, used {ids}"
    roles = {kept[cid][LABEL_ROLE]: cid for cid in kept}
    assert roles == {"docker-kernel-host": ids["docker"], "sshd": ids["ssh"]}
    for cid, labels in kept.items():
        assert _running(cid) and labels[LABEL_REUSE] == "1" and labels[LABEL_IMAGE_ID].startswith("sha256:")
        assert _eventually(lambda: _marked_processes(cid) == "", 15.0), f"a kernel process was left in {cid[:12]}"
    assert runs.leftovers() == [], "the run left its run dir"
    assert runs.store() == sorted([f"{ids['docker']}.json", f"{ids['ssh']}.json", f"{ids['ssh']}.key", "store.lock"])
    return ids


def test_a_run_with_reuse_keeps_its_containers_and_the_next_one_uses_them(runs: Runs,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    first = _assert_kept(runs, runs.run("first", "--hermes-reuse"), "first")
    second = _assert_kept(runs, runs.run("second", "--hermes-reuse"), "second")
    assert second == first
    monkeypatch.setenv("PYTEST_HERMES_REUSE", "1")  # the env var turns it on too
    assert _assert_kept(runs, runs.run("third"), "third") == first


def test_a_run_without_reuse_starts_and_removes_its_own(runs: Runs) -> None:
    kept = _assert_kept(runs, runs.run("kept", "--hermes-reuse"), "kept")
    plain = runs.run("plain")
    assert plain.ret == 0, output_of(plain)
    used = {t: str(f["container"]) for t, f in runs.facts("plain").items()}
    assert set(used) == {"docker", "ssh"} and not set(used.values()) & set(kept.values())
    assert set(runs.containers()) == set(kept.values()), "the run without reuse left its containers"
    assert all(not _running(cid) for cid in used.values())
    assert runs.leftovers() == []


def test_leftovers_of_a_run_are_cleared_before_the_next_run_gets_the_container(runs: Runs) -> None:
    first = runs.run("leaves", "--hermes-reuse", select="leaves_a_process")
    assert first.ret == 0, output_of(first)
    left = runs.facts("leaves")
    for transport, fact in left.items():  # the process is there while the container is parked
        assert str(fact["left_pid"]) in _marked_processes(str(fact["container"]))
    second = runs.run("clean", "--hermes-reuse", left_pids={t: int(str(f["left_pid"])) for t, f in left.items()})
    assert second.ret == 0, output_of(second)
    facts = runs.facts("clean")
    assert {t: f["container"] for t, f in facts.items()} == {t: f["container"] for t, f in left.items()}
    assert {t: f["leftovers"] for t, f in facts.items()} == {"docker": "(False, False)", "ssh": "(False, False)"}


def test_the_leak_check_still_reports_everything_but_the_kept_containers(runs: Runs) -> None:
    result = runs.run("leaky", "--hermes-reuse", LEAK_GRACE, select="uses_a_kernel or leaks_a_process or own_limits",
                      transports="docker")
    result.assert_outcomes(passed=3, errors=1)
    text = output_of(result)
    assert "remote kernel process" in text and "sleep 600" in text  # the leaked process is reported
    assert "no live process holds it" not in text  # the containers kept (one parked mid-run) are not
    assert len(runs.containers()) == 2


def test_a_run_whose_workers_crashed_leaves_no_run_files_and_its_containers_for_the_next_run(runs: Runs) -> None:
    # the controller removed nothing of a run whose only users crashed: its run dir stayed behind
    pytest.importorskip("xdist")
    crashed = runs.run("crashed", "--hermes-reuse", "-n", "1", select="crashes_holding")
    assert "crashed while running" in output_of(crashed)
    used = {t: f["container"] for t, f in runs.facts("crashed").items()}
    assert runs.leftovers() == [], "the run left its run dir"
    after = runs.run("after", "--hermes-reuse")
    assert after.ret == 0 and {t: f["container"] for t, f in runs.facts("after").items()} == used, output_of(after)


def test_a_container_holding_a_kept_kernel_is_not_claimed_by_the_next_run(runs: Runs) -> None:
    # the next run with reuse claimed it and cleared it: the kept kernel the summary offered was killed
    keeps = runs.run("keeps", "--hermes-reuse", "--hermes-keep-failed", select="fails_and_is_kept")
    keeps.assert_outcomes(failed=2)
    kept = runs.facts("keeps")
    after = runs.run("after", "--hermes-reuse")
    assert after.ret == 0, output_of(after)
    for transport, fact in kept.items():
        assert runs.facts("after")[transport]["container"] != fact["container"], f"{transport}: claimed"
        answer = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "exec", str(fact["kept_kernel"]),
                                 "kept"], capture_output=True, text=True, timeout=120, env=dict(os.environ))
        assert answer.returncode == 0 and "still here" in answer.stdout, (transport, answer.stdout, answer.stderr)


def test_a_sweep_leaves_a_claimed_container_alone_when_a_kernel_kept_in_it_earlier_is_swept(runs: Runs) -> None:
    # the sweep of the expired kept kernel judged its container by the first run's labels (that
    # run's host and state file are gone) and removed it under the run that had claimed it since
    keeps = runs.run("keeps", "--hermes-reuse", "--hermes-keep-failed", "--hermes-keep-failed-ttl=1",
                     select="fails_and_is_kept", transports="docker")
    keeps.assert_outcomes(failed=1)
    cid = str(runs.facts("keeps")["docker"]["container"])
    assert _eventually(lambda: _marked_processes(cid) == "", 30.0), "the kept kernel outlived its TTL"
    results: dict[str, pytest.RunResult] = {}
    later = threading.Thread(target=lambda: results.update(later=runs.run("later", "--hermes-reuse", transports="docker",
                                                                          wait_for="swept")))
    later.start()
    try:
        assert _eventually(lambda: "docker" in runs.facts("later"), RUN_TIMEOUT_S), "the later run never started"
        assert runs.facts("later")["docker"]["container"] == cid  # claimed: its kept kernel expired
        dry = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", "--dry-run", "kept",
                              "containers"], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    finally:
        with runs.out.open("a") as fh:
            fh.write(json.dumps({"run": "swept", "transport": "none"}) + "\n")
        later.join(RUN_TIMEOUT_S * 2)
    assert dry.returncode == 0 and "would remove kept kernel" in dry.stdout, (dry.stdout, dry.stderr)
    assert f"container {cid[:12]}" not in dry.stdout, dry.stdout
    assert results["later"].ret == 0, output_of(results["later"])


def test_two_runs_at_once_never_share_a_container(runs: Runs) -> None:
    results: dict[str, pytest.RunResult] = {}

    def run(me: str, other: str) -> None:
        results[me] = runs.run(me, "--hermes-reuse", wait_for=other, transports="docker")

    threads = [threading.Thread(target=run, args=pair) for pair in (("a", "b"), ("b", "a"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(RUN_TIMEOUT_S * 2)
    for me in "ab":
        assert results[me].ret == 0, output_of(results[me])
    used = {me: runs.facts(me)["docker"]["container"] for me in "ab"}
    assert used["a"] != used["b"], "two runs at once used one container"
    assert set(runs.containers()) == set(used.values())  # both kept: the next two runs get one each
    after = runs.run("after", "--hermes-reuse", transports="docker")
    assert after.ret == 0 and runs.facts("after")["docker"]["container"] in used.values()


def _sweep(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", *args, "containers", "run-files"],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


def test_sweep_leaves_kept_containers_alone_and_sweep_reused_removes_them(runs: Runs) -> None:
    kept = _assert_kept(runs, runs.run("kept", "--hermes-reuse"), "kept")
    plain = _sweep()
    assert plain.returncode == 0, plain.stderr
    assert all(_running(cid) for cid in kept.values()), "a plain sweep removed a kept container"
    dry = _sweep("--reused", "--dry-run")
    assert all(f"would remove container {cid[:12]}" in dry.stdout for cid in kept.values()), dry.stdout
    assert all(_running(cid) for cid in kept.values())
    swept = _sweep("--reused")
    assert swept.returncode == 0, swept.stderr
    assert all(f"removed container {cid[:12]}" in swept.stdout for cid in kept.values()), swept.stdout
    assert runs.containers() == {}
    assert not Path(runs_root(str(runs.tmpdir)), "reuse").exists() and runs.leftovers() == []


def test_an_expired_container_is_removed_by_the_next_run(runs: Runs) -> None:
    kept = runs.run("short", "--hermes-reuse", "--hermes-reuse-idle-timeout=0.001", transports="docker")
    assert kept.ret == 0, output_of(kept)
    old = runs.facts("short")["docker"]["container"]
    again = runs.run("later", "--hermes-reuse", transports="docker")
    assert again.ret == 0, output_of(again)
    assert runs.facts("later")["docker"]["container"] != old and not _running(str(old))


@pytest.fixture
def own_image(runs: Runs) -> Iterator[Callable[[], str]]:
    """A tag of the kernel host image for this test; calling the fixture's value rebuilds it (a new id)."""
    import docker

    from pytest_hermes_kernel.containers.images import ensure_image

    client = docker.from_env(timeout=600)
    tag = f"hermes-reuse-test-{runs.prefix}:latest"
    client.images.get(ensure_image(client, progress=lambda _line: None)).tag(tag)

    def rebuild() -> str:
        dockerfile = io.BytesIO(f"FROM {tag}\nLABEL org.hermes-kernel.test-rebuild={uuid.uuid4().hex}\n".encode())
        image, _ = client.images.build(fileobj=dockerfile, tag=tag, pull=False, rm=True)
        return str(image.id)

    try:
        yield rebuild
    finally:
        _remove(list(runs.containers()))
        try:
            client.images.remove(tag)
        except docker.errors.APIError:
            pass
        client.close()


def test_a_changed_image_is_not_reused_and_the_sweep_removes_its_container(runs: Runs,
                                                                           own_image: Callable[[], str]) -> None:
    tag = f"hermes-reuse-test-{runs.prefix}:latest"
    first = runs.run("old", "--hermes-reuse", f"--hermes-image={tag}", transports="docker")
    assert first.ret == 0, output_of(first)
    old = str(runs.facts("old")["docker"]["container"])
    new_id = own_image()
    second = runs.run("new", "--hermes-reuse", f"--hermes-image={tag}", transports="docker")
    assert second.ret == 0, output_of(second)
    new = str(runs.facts("new")["docker"]["container"])
    assert new != old and not _running(old), "a container of the old image was reused or left"
    assert runs.containers()[new][LABEL_IMAGE_ID] == new_id
