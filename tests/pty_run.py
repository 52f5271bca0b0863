"""A pytest run in a subprocess behind a pseudo-terminal, so that a debugger prompt really waits
for the keys a test sends it (``--pdb``, ``--trace``, ``breakpoint()``), and Ctrl-C is a SIGINT
to the run's foreground process group, as a terminal sends it.

Every wait is on text appearing, with a deadline; a run still going when the test ends is killed.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path


class PtyRun:
    """``python -m pytest ARGS`` in ``cwd``, its stdin, stdout and stderr one pty."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self._master, slave = os.openpty()
        environ = {**os.environ, "COLUMNS": "120", **(env or {})}
        self.proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=cwd, stdin=slave, stdout=slave,
                                     stderr=slave, env=environ, start_new_session=True, close_fds=True)
        os.close(slave)
        self._out = b""

    @property
    def text(self) -> str:
        """Everything the run wrote so far."""
        return self._out.decode(errors="replace")

    def _read(self, timeout: float) -> bool:
        """Read what is there within ``timeout``; False once the pty is closed."""
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self._master, 65536)
        except OSError:  # EIO: the run ended and closed its side
            return False
        self._out += data
        return bool(data)

    def expect(self, pattern: str, timeout: float, *, after: int = 0) -> re.Match[str]:
        """Wait until the output from character ``after`` on matches ``pattern``; the match."""
        deadline = time.monotonic() + timeout
        while True:
            match = re.compile(pattern).search(self.text, after)
            if match:
                return match
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 0.5)) and self.proc.poll() is not None):
                raise AssertionError(f"no {pattern!r} in the run's output within {timeout} s "
                                     f"(exit status {self.proc.poll()}):\n{self.text[-3000:]}")

    def send(self, line: str) -> int:
        """Type ``line`` and Enter; returns where the output stood, for ``expect(after=...)``."""
        mark = len(self.text)
        os.write(self._master, line.encode() + b"\n")
        return mark

    def ctrl_c(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)

    def wait(self, timeout: float) -> int:
        """Read until the run ends (``timeout`` at most: then it is killed and this fails); its exit status."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.2)
        while self._read(0.05) and len(select.select([self._master], [], [], 0)[0]):
            pass
        if self.proc.poll() is None:
            self.kill()
            raise AssertionError(f"the run did not end within {timeout} s:\n{self.text[-3000:]}")
        return self.proc.returncode

    def kill(self) -> None:
        """End the run and what it started in its session, if it still runs; close the pty."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        try:
            os.close(self._master)
        except OSError:
            pass
