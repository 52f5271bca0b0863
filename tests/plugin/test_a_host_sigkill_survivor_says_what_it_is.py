"""A process that outlived its SIGKILLed host is named for what it is: the runner, the worker, or
a process a cell started.

Found by the user-reproduction round (2026-12-06): a tool daemonized its indexer the classic way
(fork, ``setsid``, fork again: no ``exec``), so the survivor's command line is the kernel
server's (``python -B .../hermes-runner-....pyz server --fd 6``). The error said ``still alive:
10685: python -B .../hermes-runner-....pyz server --fd 6``, which reads as the kit's own runner
outliving its host (a kit bug), not the user's daemon. Each survivor now says which it is, in the
marker's error and in what ``hermes_faults.host_sigkill()`` returns.
"""

from __future__ import annotations

import pytest

DAEMON = '''
import pytest

DAEMONIZE = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(300)
    os._exit(0)
else:
    os.wait()
"""


@pytest.mark.hermes_host_sigkill(during_cell=2, delay=0.3)
def test_the_daemon_dies_with_its_host(hermes_kernel):
    from pytest_hermes_kernel import HostGoneError
    hermes_kernel.execute(DAEMONIZE)
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("import time; time.sleep(30)")


def test_the_fixtures_host_sigkill_names_it_too(hermes_faults):
    import os
    h = hermes_faults.harness("local")
    h.execute(DAEMONIZE)
    left = hermes_faults.host_sigkill(h, bound=2.0)
    for line in left:
        os.kill(int(line.split(":", 1)[0]), 9)
    assert len(left) == 1 and left[0].endswith("(a process a cell started, not its runner or worker)"), left
'''


def test_a_forked_daemon_that_outlived_its_host_is_named_a_cells_process(pytester: pytest.Pytester, run) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_daemon=DAEMON)

    result = run("--hermes-transport=local")

    result.assert_outcomes(passed=2, errors=1)
    out = result.stdout.str()
    survivors = out.split("still alive:", 1)[1].split("------", 1)[0].strip().splitlines()
    assert len(survivors) == 1, out[-3000:]
    assert survivors[0].rstrip().endswith("(a process a cell started, not its runner or worker)"), out[-3000:]
