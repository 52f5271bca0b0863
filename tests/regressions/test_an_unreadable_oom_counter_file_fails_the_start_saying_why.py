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


def _start_error(where: str, counter: str) -> str:
    """The start error of a kernel on ``where`` (``local-spawn``: the spawn path) given ``counter``."""
    name, _, spawn = where.partition("-")
    transport = make_transport(name, **({"server": False} if spawn else {}))
    try:
        with pytest.raises(KernelStartError) as exc:
            with start_kernel(transport, oom_counter_file=counter, start_timeout=30):
                pytest.fail("started with a counter it cannot read")
    finally:
        transport.close()
    return str(exc.value)


@pytest.mark.parametrize("where", ["local", "local-spawn", "filecell"])
def test_a_directory_named_as_the_counter_is_named_so(tmp_path, where) -> None:
    text = _start_error(where, str(tmp_path))

    assert f"no oom_kill count in oom_counter_file={str(tmp_path)!r} (Is a directory)" in text, text
    assert "missing" not in text


@pytest.mark.parametrize("where", ["local", "local-spawn", "filecell"])
def test_a_counter_file_without_an_oom_kill_line_is_named_so(tmp_path, where) -> None:
    """A file there and readable, but no counter: the other cgroup version's name on this host
    (v1's ``memory.oom_control`` lines on a v2 host's path, here). Every OOM kill read as a plain
    SIGKILL, silently (``test_an_oom_kill_is_read_from_the_cgroup_the_worker_joins.py``)."""
    wrong = tmp_path / "memory.oom_control"
    wrong.write_text("under_oom 0\n")

    text = _start_error(where, str(wrong))

    assert f"no oom_kill count in oom_counter_file={str(wrong)!r} (it has no oom_kill line)" in text, text
    assert "would read as a plain SIGKILL" in text


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
