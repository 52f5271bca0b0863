"""Bug: Ctrl-C (or a CI's SIGTERM) landing while ``--hermes-keep-failed`` keeps a failed test's
kernel left a kept record naming a kernel the cut-short keep had ended.

The plugin writes the record first, then asks the runner to stay. A ``KeyboardInterrupt`` in that
ask ends the runner (``keep()`` kills it rather than leave it owned by no one), but the record
stayed: ``hermes-kernel ls`` listed the kernel (ALIVE ``no``), the summary said nothing of it, and on
docker and ssh the record held the run's container (kernel host, sshd) for the whole TTL (an
hour by default): the run's end and every later run's start-up sweep leave a container alone while
an unexpired record names it. Seen by interrupting real runs as the kept dir appeared (docker and
ssh, Ctrl-C and SIGTERM); here the SIGINT is raised exactly as the keep request goes out.
"""

from __future__ import annotations

import uuid

import pytest

from tests.plugin.test_keep_failed import hermes, kept_env, records  # noqa: F401
from tests.support import pids_with_kernel_id, run_containers, wait_until

INTERRUPTED_KEEP = """
import json, signal
from pathlib import Path

signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal, whatever this run inherited


class SigintAsTheKeepGoesOut:
    def __init__(self, inner):
        self.inner, self.done = inner, False

    def send(self, data):
        self.inner.send(data)
        if not self.done and b'"type":"keep"' in data:
            self.done = True
            signal.raise_signal(signal.SIGINT)  # Ctrl-C, right after the runner was told to stay

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_fails(hermes_kernel):
    hermes_kernel.execute("evidence = 'what went wrong'")
    Path("kernel.json").write_text(json.dumps({"id": hermes_kernel.kernel_id}))
    channel = hermes_kernel._runtime.require_link().channel
    channel.stream = SigintAsTheKeepGoesOut(channel.stream)
    assert False, "deliberate failure"
"""


@pytest.mark.parametrize("transport", ["local", "docker"])
def test_ctrl_c_during_a_failed_tests_keep_leaves_no_record_and_no_container(
        pytester: pytest.Pytester, run, kept_env, request: pytest.FixtureRequest, transport: str) -> None:  # noqa: F811
    if transport == "docker":
        request.getfixturevalue("docker_ready")
    pytester.makepyfile(test_keep=INTERRUPTED_KEEP)
    run_id = f"keep-cut-{uuid.uuid4().hex[:12]}"
    result = run("--hermes-keep-failed", f"--hermes-transport={transport}", f"--hermes-run-id={run_id}")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    assert "kept for post-mortem:" not in out, out
    assert records(kept_env) == [], "a kept record names a kernel its cut-short keep ended"
    listed = hermes("ls")
    assert listed.returncode == 0 and "no kernel is kept for post-mortem" in listed.stdout, listed.stdout
    kid = __import__("json").loads((pytester.path / "kernel.json").read_text())["id"]
    wait_until(lambda: not pids_with_kernel_id(kid), 5.0, what="the kernel's processes to end")
    if transport == "docker":
        assert [c["Id"][:12] for c in run_containers(run_id)] == [], "the run's container outlived it"
