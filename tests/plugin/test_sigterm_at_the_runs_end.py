"""Bug: a SIGTERM (a CI job cancelled) that came once the run's tests were done, while pytest
finished the session or closed the run's transports, ended pytest with a ``KeyboardInterrupt``
traceback of some 50 lines and exit status 1, read as failed tests.

The plugin turns a SIGTERM into a ``KeyboardInterrupt`` so that teardown runs; pytest catches
that only while tests run. Now, from the session's finish on, a SIGTERM ends the process at once
with exit status 143 and no traceback, and the exit hook still closes the run's transports: its
container is gone. Found by signalling real runs as their session ended (docker, ssh, local).
"""

from __future__ import annotations

import pytest

CONFTEST = """
import signal

def {hook}({arg}):
    if not hasattr({config}, "workerinput"):
        signal.raise_signal(signal.SIGTERM)  # the CI's cancel, as the run ends
"""

ONE_KERNEL = """
def test_one(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"
"""

HOOKS = {"sessionfinish": ("pytest_sessionfinish", "session", "session.config"),
         "unconfigure": ("pytest_unconfigure", "config", "config")}


@pytest.mark.parametrize("where", list(HOOKS))
def test_a_sigterm_as_the_run_ends_exits_143_without_a_traceback(pytester: pytest.Pytester, run, docker_ready: None,
                                                                 where: str) -> None:
    hook, arg, config = HOOKS[where]
    pytester.makeconftest(CONFTEST.format(hook=hook, arg=arg, config=config))
    pytester.makepyfile(test_one=ONE_KERNEL)
    result = run("--hermes-transport=docker")  # fails if the run's container or run dir outlived it
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 128 + 15, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
