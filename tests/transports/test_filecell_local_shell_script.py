"""filecell: ``LocalShellBackend`` runs a command as the script of one ``sh``, from a memfd.

The command used to reach ``sh`` through ``s=$(cat); ...; eval "$s"``: a ``cat`` process for
every execute (~1.4 ms of CPU of a filecell cell). It is now a memfd the shell runs as
``/dev/fd/0``; what a command sees must not change: its whole text runs, in no argv, with stdin
``/dev/null``, its exit status and output as before, and nothing it leaves running holds the text
(a launch's config is in it).
"""

from __future__ import annotations

import os
import subprocess
import time

from pytest_hermes_kernel.transports.filecell import shell_io
from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend


def test_a_command_longer_than_a_pipe_runs_whole_with_its_status_and_output() -> None:
    filler = "".join(f": {'x' * 70} {i}\n" for i in range(3000))  # ~230 KB of no-ops: over a pipe's 64 KiB

    code, out = LocalShellBackend().execute(f"echo first; {filler}echo 'é last'; exit 7", 30.0)

    assert (code, out) == (7, "first\né last\n")


def test_a_command_reads_an_empty_stdin_and_leaves_no_descriptor_of_its_text(tmp_path) -> None:
    mark = tmp_path / "left"
    # a background process outlives the command: none of its descriptors may be the command's text
    cmd = (f"read -r line; echo \"stdin: [$line] $?\"; ( ls -l /proc/self/fd/ > {mark}.tmp; mv {mark}.tmp {mark} ) "
           "</dev/null >/dev/null 2>&1 &\nwait")

    code, out = LocalShellBackend().execute(cmd, 30.0)

    assert (code, out) == (0, "stdin: [] 1\n")
    deadline = time.monotonic() + 10.0
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    fds = mark.read_text()
    assert "memfd:" not in fds and "hermes-command" not in fds, fds


def test_a_command_is_in_no_argv_of_its_shell() -> None:
    secret = f"s3cret-{os.urandom(4).hex()}"

    code, out = LocalShellBackend().execute(f": {secret}; cat /proc/$$/cmdline", 30.0)

    assert code == 0 and out.split("\0")[0] == "sh" and secret not in out, out


def test_where_there_is_no_memfd_the_command_goes_through_the_shim(monkeypatch) -> None:
    monkeypatch.setattr(shell_io, "_HAS_DEV_FD", False)
    seen: list[list[str]] = []
    popen = subprocess.Popen

    def recording(args, *a, **kw):  # type: ignore[no-untyped-def]
        seen.append(list(args))
        return popen(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", recording)

    code, out = LocalShellBackend().execute("read -r x; echo \"[$x]\"; exit 3", 30.0)

    assert (code, out) == (3, "[]\n")
    assert seen and seen[0][1:] == ["-c", "s=$(cat); exec </dev/null; eval \"$s\""], seen
