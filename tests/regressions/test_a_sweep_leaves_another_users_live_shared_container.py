"""Seen (a non-root breaker helper, 2026-12-05): two users of one docker engine (an ordinary user
in the ``docker`` group beside root's CI). A shared kernel host or sshd container names its run's
state file, under its user's 0700 ``<tmp>/pytest-hermes-kernel-<uid>/``; the other user's sweep
(which every process's first docker use runs) asked ``os.path.exists`` of it, which says ``False``
for a path it may not look into, and then judged the container by its creating host alone. Once
that host had ended (an xdist worker that finished first, while the others still used the
container), the ordinary user's sweep counted root's live container unused and removed it mid-run.
A state file this user may not look at now counts as in use, as one it may not read already did."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile

import psutil
import pytest

from tests.nonroot import unprivileged_user

JUDGE = """
from pytest_hermes_kernel.containers.sweep import in_use
print("IN_USE", in_use({labels!r}))
"""


def test_another_users_shared_container_with_a_live_member_and_a_gone_creator_is_in_use() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root, to make a run dir another user cannot look into")
    from pytest_hermes_kernel.containers.labels import (LABEL, LABEL_HOST_PID, LABEL_HOST_START, LABEL_HOSTNAME,
                                                        LABEL_STATE_FILE)

    user = unprivileged_user()
    run_dir = tempfile.mkdtemp(prefix="hk-run-")  # 0700, root's: as <tmp>/pytest-hermes-kernel-0/run-<id>
    state = os.path.join(run_dir, "docker-kernel-host.json")
    me = psutil.Process()
    with open(state, "w", encoding="utf-8") as fh:  # a member alive: this very process
        json.dump({"members": [f"{me.pid}:{me.create_time()}:token"]}, fh)
    gone = psutil.Popen(["true"])
    gone.wait()  # the creating host: ended
    labels = {LABEL: "1", LABEL_HOSTNAME: socket.gethostname(), LABEL_STATE_FILE: state,
              LABEL_HOST_PID: str(gone.pid), LABEL_HOST_START: "1.0"}
    try:
        ran = user.run(JUDGE.format(labels=labels))
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "IN_USE True" in ran.stdout, ran.stdout
    finally:
        shutil.rmtree(run_dir)
