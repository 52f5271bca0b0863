"""``hermes-kernel exec``/``attach`` on a kept kernel whose TTL ran out. A new user following
README's post-mortem flow with a short ``--hermes-keep-failed-ttl`` got, where ``ls`` said
``expired  no``: ``hermes-kernel: the kept local kernel at /tmp/hermes-kernel-.../kept.sock refused
the connection: [Errno 2] No such file or directory``, which reads as a fault of the machine, not
as the kernel's end. Now the line first says the kernel expired, when, and that its namespace is
gone; the exit status is still 2 (cannot be reached)."""

from __future__ import annotations

import pytest

from tests.plugin.test_keep_failed import FAILING_TEST, hermes, kept_env as kept_env, kept_kernel  # noqa: F401
from tests.support import gone, pids_with_kernel_id, wait_until


@pytest.mark.parametrize("command", ["exec", "attach"])
def test_a_command_on_an_expired_kept_kernel_says_it_expired(pytester, run, kept_env, command):  # noqa: F811
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed", "--hermes-keep-failed-ttl", "1").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)
    wait_until(lambda: gone(pid) and not pids_with_kernel_id(kid), 15.0, what=f"kept kernel {kid} to expire")

    done = hermes(command, kid, "evidence") if command == "exec" else hermes(command, kid, stdin="evidence\n")

    assert done.returncode == 2, (done.stdout, done.stderr)
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"hermes-kernel: kernel {kid} expired at "), first
    assert "no client came for its TTL (1 s, --hermes-keep-failed-ttl), so it ended by itself and its namespace " \
           "is gone; " in first, first
