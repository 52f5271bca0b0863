"""Running a piece of this repo's tests as an ordinary (non-root) user.

A real user, and many CI runners, are not root: a test of what such a user sees runs its code in
a subprocess as one. Run as root, that is :data:`TEST_USER` (made with ``useradd`` when missing,
and left on the machine: ``userdel -r hermes-nonroot`` removes it); run as anyone else, the test
process's own user already is such a user, and the code runs as it. The subprocess is a Python
of this process's version that the user may run, on this process's ``sys.path`` (the checkout and
its site-packages must be readable to the user: a skip says so when they are not). Nothing here
passes without running: a test that cannot get such a user skips, naming why.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

TEST_USER = "hermes-nonroot"


@dataclass(frozen=True)
class Unprivileged:
    """A user that is not root, and how to run this repo's Python as it."""

    name: str
    uid: int
    gid: int
    home: str
    python: str

    def run(self, code: str, *, timeout: float = 120.0, env: dict[str, str] | None = None,
            cwd: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``code`` (dedented) as this user; stdout and stderr as text, never raises on a status."""
        base = {"PATH": f"{os.path.dirname(self.python)}:/usr/local/bin:/usr/bin:/bin", "HOME": self.home,
                "USER": self.name, "LOGNAME": self.name, "LANG": "C.UTF-8",
                "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)),
                "TESTCONTAINERS_RYUK_DISABLED": "true"}
        switch: dict[str, object] = {}
        if os.geteuid() == 0:
            switch = {"user": self.uid, "group": self.gid, "extra_groups": []}
        return subprocess.run([self.python, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=timeout, env={**base, **(env or {})}, cwd=cwd or "/", check=False,
                              **switch)  # type: ignore[arg-type]


def unprivileged_user() -> Unprivileged:
    """This process's user when it is not root; else :data:`TEST_USER`, made when missing.

    Skips (naming why) when root cannot make the user or find a Python it may run.
    """
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return Unprivileged(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir, sys.executable)
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            pytest.skip(f"needs a non-root user: no user {TEST_USER} and no useradd to make one")
        made = subprocess.run([useradd, "-m", "-s", "/bin/sh", TEST_USER], capture_output=True, text=True, check=False)
        try:
            entry = pwd.getpwnam(TEST_USER)  # made here, or by a parallel test (xdist) meanwhile
        except KeyError:
            pytest.skip(f"needs a non-root user: useradd {TEST_USER} failed: {made.stderr.strip()}")
    user = Unprivileged(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir, "")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable, getattr(sys, "_base_executable", ""), f"/usr/bin/python{version}",
                  f"/usr/local/bin/python{version}"]
    tried = []
    for python in dict.fromkeys(c for c in candidates if c and os.path.exists(c)):
        try:
            probe = Unprivileged(user.name, user.uid, user.gid, user.home, python).run(
                "import sys, psutil, pytest_hermes_kernel; print(sys.version_info[:2])", timeout=60)
        except OSError as exc:  # the user may not run it (a pyenv under root's 0700 home)
            tried.append(f"{python}: {exc.strerror}")
            continue
        if probe.returncode == 0 and probe.stdout.strip() == str(tuple(sys.version_info[:2])):
            return Unprivileged(user.name, user.uid, user.gid, user.home, python)
        tried.append(f"{python}: {(probe.stderr.strip().splitlines() or ['?'])[-1]}")
    pytest.skip(f"needs a Python {version} that user {TEST_USER} may run, with this checkout and its "
                f"site-packages readable: {'; '.join(tried) or 'none found'}")
