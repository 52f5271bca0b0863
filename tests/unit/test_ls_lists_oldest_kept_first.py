"""``hermes-kernel ls`` lists the kept kernels oldest first, by when each was kept, so the README's
``ID=$(hermes-kernel ls --ids --test ... | tail -n 1)`` is the newest kept kernel. It sorted them by
when their last client left: an ``exec`` or ``attach`` on an older kernel moved it to the end, and
the README's next line (``exec``, ``sweep --kept --kernel "$ID"``) went to that older kernel."""

from __future__ import annotations

import time

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept


def _keep(kernel_id: str, leg: str, kept_at: float, detached_at: float) -> None:
    kept.save(kept.KeptKernel(kernel_id=kernel_id, transport="local", locator={}, token="t",
                              nodeid=f"test_postmortem.py::test_load[{leg}]", kept_at=kept_at,
                              detached_at=detached_at, ttl_s=3600.0, host_pid=1))


def test_an_exec_on_an_older_kept_kernel_does_not_make_it_the_newest(private_tmp, capsys):
    now = time.time()
    _keep("a" * 32, "local", kept_at=now - 300, detached_at=now - 10)  # kept first, exec'd since
    _keep("b" * 32, "docker", kept_at=now - 200, detached_at=now - 200)
    _keep("c" * 32, "ssh", kept_at=now - 100, detached_at=now - 100)  # kept last: the newest

    assert main(["ls", "--ids", "--test", "test_postmortem.py::test_load"]) == 0
    assert capsys.readouterr().out.splitlines() == ["a" * 32, "b" * 32, "c" * 32]

    assert main(["ls"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["a" * 32, "b" * 32, "c" * 32], rows
