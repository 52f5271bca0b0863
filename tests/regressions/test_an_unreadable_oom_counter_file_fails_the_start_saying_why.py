"""Seen (a breaker helper, 2026-12-06): a kernel started with an ``oom_counter_file`` it cannot
read failed its start (right: its OOM kills would read as plain SIGKILLs) with ``no oom_kill count
in oom_counter_file='.../memory.events' (missing, or a file without an oom_kill line)`` for a file
that was there, with an ``oom_kill`` line: one this user may not read (``chmod 000``, a cgroup of
another user's), or a directory named in its place. The start now names the error reading it.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import make_transport
from tests.nonroot import unprivileged_user

EVENTS = "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n"  # cgroup v2's memory.events


@pytest.mark.parametrize("where", ["local", "local-spawn", "filecell"])
def test_a_directory_named_as_the_counter_is_named_so(tmp_path, where) -> None:
    name, _, spawn = where.partition("-")
    transport = make_transport(name, **({"server": False} if spawn else {}))
    try:
        with pytest.raises(KernelStartError) as exc:
            with start_kernel(transport, oom_counter_file=str(tmp_path), start_timeout=30):
                pytest.fail("started with a counter it cannot read")
    finally:
        transport.close()

    assert f"no oom_kill count in oom_counter_file={str(tmp_path)!r} (Is a directory)" in str(exc.value), str(exc.value)
    assert "missing" not in str(exc.value)


START = """
from pytest_hermes_kernel import KernelStartError, start_kernel
try:
    with start_kernel("local", oom_counter_file={path!r}, start_timeout=30):
        print("STARTED")
except KernelStartError as exc:
    print("REFUSED", exc)
"""


def test_a_counter_this_user_may_not_read_is_named_so() -> None:
    user = unprivileged_user()
    where = tempfile.mkdtemp(prefix="hk-counter-")
    os.chmod(where, 0o755)
    counter = os.path.join(where, "memory.events")
    with open(counter, "w", encoding="ascii") as fh:
        fh.write(EVENTS)
    os.chmod(counter, 0)
    try:
        ran = user.run(START.format(path=counter))
    finally:
        os.unlink(counter)
        os.rmdir(where)

    assert "REFUSED" in ran.stdout, ran.stdout + ran.stderr
    assert f"no oom_kill count in oom_counter_file={counter!r} (Permission denied)" in ran.stdout, ran.stdout
