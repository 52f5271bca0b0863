"""Seen (a breaker helper, 2026-12-06): a kernel started under a memory limit
(``cgroup_procs=`` of a ``hermes_faults.memory_cgroup(128 MiB)``) whose group was removed while the
kernel lived on (its owner's cleanup killed what was in it and removed it, while the kernel was one
of a wider scope) said only that its worker died (``signal 9``, right); every worker after that ran
outside any such group, without the limit, and said nothing: a cell that took 400 MB came back
``ok``, where the start refuses a cgroup it cannot join. A worker that cannot join now says so in
one line and ends as a failed start: the cell is ``died`` with that line in its note (or in its
stderr, when the cell had begun as the worker said it).
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.faults.cgroup import create_memory_cgroup
from pytest_hermes_kernel.transports import make_transport

TAKE_400_MB = "hog = [b'x' * 2**22 for _ in range(100)]\nlen(hog)"


@pytest.mark.parametrize("where", ["local", "local-spawn", "filecell"])
def test_the_next_cell_names_the_cgroup_it_cannot_join(where) -> None:
    try:
        cg = create_memory_cgroup(128 * 2**20)
    except TransportUnavailableError as exc:
        pytest.skip(f"no memory cgroup here: {exc}")
    name, _, spawn = where.partition("-")
    transport = make_transport(name, **({"server": False} if spawn else {}))
    try:
        with start_kernel(transport, cgroup_procs=cg.procs_file, oom_counter_file=cg.oom_counter_file,
                          start_timeout=30) as kernel:
            assert kernel.execute("x = 1").status == "ok"
            cg.remove()  # kills the worker, then removes the group
            results = [kernel.execute(TAKE_400_MB, timeout=60) for _ in range(2)]
    finally:
        transport.close()
        cg.remove()

    said = f"the worker cannot join the cgroup cgroup_procs={cg.procs_file!r}: No such file or directory"
    for result in results:
        assert result.status == "died" and result.value != "100", result.summary()
        # (in the note, or in the cell's stderr when the cell had begun as the worker said it)
        assert said in result.kernel.note or said in result.stderr, (result.kernel.note, result.stderr)
