"""Seen (a non-root breaker helper, 2026-12-05): the filecell transport's default root was one
fixed path for every user of a machine, ``/tmp/hermes-filecell``. Once root (or any user) had run
a filecell kernel there, every other user's filecell kernel failed to start: "HERMES-FILECELL-ERROR
root: /tmp/hermes-filecell is not a directory owned by hkuser" (the whole ``filecell`` leg of a
matrix errored, 1 error a test), while ``hermes-kernel doctor`` said ``filecell ok``. The default
root is now per user, ``/tmp/hermes-filecell-<uid>``."""

from __future__ import annotations

import os
import shutil

from tests.nonroot import unprivileged_user

LEGACY_ROOT = "/tmp/hermes-filecell"

CELL = """
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

t = make_transport("filecell")
try:
    with start_kernel(t, start_timeout=60) as k:
        print("ROOT", t.root)
        print("VALUE", k.execute("import os; os.getuid()").value)
finally:
    t.close()
"""


def test_a_non_root_users_filecell_kernel_starts_where_another_user_made_the_old_root() -> None:
    user = unprivileged_user()
    if os.geteuid() == 0 and not os.path.lexists(LEGACY_ROOT):
        os.mkdir(LEGACY_ROOT, 0o700)  # the old default, as a root run of the filecell leg left it
    try:
        ran = user.run(CELL)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert f"VALUE {user.uid}" in ran.stdout, ran.stdout + ran.stderr
        assert f"ROOT /tmp/hermes-filecell-{user.uid}\n" in ran.stdout, ran.stdout
    finally:
        if os.geteuid() == 0:
            shutil.rmtree(f"/tmp/hermes-filecell-{user.uid}", ignore_errors=True)
