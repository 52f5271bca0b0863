"""``hermes-kernel attach`` ended by SIGHUP (its terminal closed) or SIGTERM while at its prompt
leaves as Ctrl-C there does: one line, exit status 128 + N, the kernel kept with its TTL started
again (the record says when its last client left). It died of the signal at once: the record
kept the time of the attach, so after a console open longer than the TTL ``ls`` called a live
kernel expired, and the plain ``hermes-kernel sweep`` ended it under its new TTL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.plugin.test_keep_failed import CLI_TIMEOUT_S, FAILING_TEST, hermes, kept_env, kept_kernel  # noqa: F401
from tests.support import gone


def _detached_at(tmp, kid: str) -> float:  # noqa: ANN001
    record = tmp / f"pytest-hermes-kernel-{os.getuid()}" / "kept" / f"{kid}.json"
    return json.loads(record.read_text())["detached_at"]


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_a_signal_at_the_attach_prompt_leaves_the_kernel_kept_with_its_ttl_started_again(pytester, run, kept_env,
                                                                                          sig):
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)
    attached_after = _detached_at(kept_env, kid)
    with subprocess.Popen([sys.executable, "-m", "pytest_hermes_kernel.cli", "attach", kid], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)) as console:
        try:
            console.stdin.write("evidence\n")
            console.stdin.flush()
            assert console.stdout.readline() == "'what went wrong'\n"  # attached, and at the prompt
            at_the_prompt = time.time()

            console.send_signal(sig)

            code = console.wait(timeout=CLI_TIMEOUT_S)  # stdin open: an EOF must not end it first
            out, err = console.stdout.read(), console.stderr.read()
        finally:
            if console.poll() is None:
                console.kill()
    assert (code, out) == (128 + sig, ""), (code, err)
    assert err == f"hermes-kernel: ended by {sig.name} at the prompt; kernel {kid} stays kept\n", err
    assert _detached_at(kept_env, kid) >= at_the_prompt > attached_after  # its TTL runs from now
    assert not gone(pid)
    after = hermes("exec", kid, "evidence")
    assert (after.returncode, after.stdout) == (0, "'what went wrong'\n"), after.stderr
