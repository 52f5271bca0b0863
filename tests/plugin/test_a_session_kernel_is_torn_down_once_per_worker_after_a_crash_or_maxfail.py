"""Handed case B41, the part test_xdist_crash.py does not look at: "session teardown runs twice or
never" (pytest-dev/pytest#12021, pytest-xdist#679). A session-scoped fixture holding a
:class:`KernelRegistry` and its kernel, under ``pytest -n 2`` with ``--maxfail=1``, with a test that
ends its worker (``os._exit``), and both: each worker process sets the fixture up once and tears it
down once, a crashed one never (it cannot: the controller reaps its kernels), and no kernel of
any of them runs after the run. On local, filecell and docker (the fixture's key names its transport).
"""

from __future__ import annotations

import json

import pytest

from pytest_hermes_kernel.procs import processes_with_env
from tests.support import wait_until

pytest.importorskip("xdist")

#: Seconds for a kernel of the inner run to be gone once the run has ended (a crashed worker's are
#: reaped by the controller as the crash is reported; this is only the slack of a loaded machine).
GONE_S = 10.0

CONFTEST = """
import json, os, pathlib
import pytest
from pytest_hermes_kernel import KernelKey, KernelRegistry

EVENTS = pathlib.Path(__file__).parent / "events.jsonl"
KEY = KernelKey(owner="agent", transport=os.environ["B41_TRANSPORT"])


def note(event, **facts):
    with open(EVENTS, "a") as fh:
        fh.write(json.dumps({"event": event, "pid": os.getpid(), **facts}) + "\\n")


@pytest.fixture(scope="session")
def registry():
    with KernelRegistry() as reg:
        kernel = reg.get_or_start(KEY)
        note("setup", kernel=kernel.kernel_id)
        yield reg
        note("teardown", kernel=kernel.kernel_id)
    note("closed")
"""

INNER = """
import os
import pytest
from conftest import KEY, note


def test_fails(registry):
    assert registry.execute(KEY, "1").value == "2", "an ordinary failure"


def test_crashes(registry):
    assert registry.execute(KEY, "1").value == "1"
    if os.environ.get("B41_CRASH"):
        note("crash")
        os._exit(1)


@pytest.mark.parametrize("n", range(6))
def test_uses(registry, n):
    assert registry.execute(KEY, f"{n} + 1").value == str(n + 1)


@pytest.fixture
def dies_in_teardown(registry):
    yield registry
    if os.environ.get("B41_CRASH"):
        note("crash")
        os._exit(1)


def test_whose_teardown_ends_its_worker(dies_in_teardown):
    assert dies_in_teardown.execute(KEY, "2 + 2").value == "4"
"""


@pytest.fixture(params=["local", "filecell", "docker"])
def transport_name(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        request.getfixturevalue("docker_ready")
    return request.param


@pytest.mark.parametrize("how", ["maxfail", "crash", "crash-maxfail"])
def test_each_workers_session_registry_is_torn_down_once_and_its_kernels_end(
        pytester: pytest.Pytester, run, monkeypatch: pytest.MonkeyPatch, transport_name: str, how: str) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=INNER)
    monkeypatch.setenv("B41_TRANSPORT", transport_name)
    if "crash" in how:
        monkeypatch.setenv("B41_CRASH", "1")

    result = run("-n", "2", *(["--maxfail=1"] if "maxfail" in how else []))

    out = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in out, out[-3000:]
    events = [json.loads(line) for line in (pytester.path / "events.jsonl").read_text().splitlines()]
    for pid in {event["pid"] for event in events}:
        seen = [event["event"] for event in events if event["pid"] == pid]
        assert seen in (["setup", "teardown", "closed"], ["setup", "crash"]), f"worker pid {pid}: {seen}\n{out[-3000:]}"
    if "crash" in how and "maxfail" not in how:
        assert any(event["event"] == "crash" for event in events), f"no worker crashed:\n{out[-3000:]}"
    for event in events:
        if event["event"] == "setup":
            wait_until(lambda: not processes_with_env("HERMES_KERNEL_ID", event["kernel"]), GONE_S,
                       what=f"the kernel {event['kernel']} of worker pid {event['pid']} to be gone")

