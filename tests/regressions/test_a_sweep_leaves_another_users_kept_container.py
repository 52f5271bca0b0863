"""Seen (a non-root breaker helper, 2026-12-05): root ran ``pytest --hermes-transport=docker
--hermes-keep-failed``; its failed test's kernel was kept, with its container, for post-mortem.
Then an ordinary user in the ``docker`` group started any docker use, whose start-up sweep would
remove that container (``sweep_dead_runs(dry_run=True)`` listed it, ``ec8214e929aa``; root's
own sweep did not): the kept kernel's record is under root's 0700
``<tmp>/pytest-hermes-kernel-0/kept``, out of the user's sight, and the container's host (root's
pytest) was gone. The same the other way: root's sweep judged an ordinary user's kept container
by root's records. A sweep now judges only containers its own user made (label
``org.hermes-kernel.uid``, or for an older kit's container the uid its run files' path names)."""

from __future__ import annotations

import os

import psutil
import pytest

from pytest_hermes_kernel.containers import sweep
from pytest_hermes_kernel.containers.labels import LABEL_HOST_PID, LABEL_STATE_FILE, LABEL_TMPDIR, run_labels


def _sweeps(labels: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    class FakeApi:
        def containers(self, all: bool, filters: dict) -> list[dict]:  # noqa: A002 - docker-py's name
            return [{"Id": "kept-container", "Labels": labels}]

    class FakeClient:
        api = FakeApi()

    monkeypatch.setattr(sweep, "remove_container", lambda cid, client: pytest.fail("a dry run removed a container"))
    return sweep.sweep_dead_runs(FakeClient(), dry_run=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["uid label", "older kit: state file path"])
def test_a_sweep_leaves_a_container_another_user_made_alone(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    gone = psutil.Popen(["true"])
    gone.wait()  # the container's host: ended, as a kept kernel's pytest has
    other = os.getuid() + 1
    labels = {**run_labels(run_id="theirs", worker_id="controller", role="docker-kernel-host"),
              LABEL_HOST_PID: str(gone.pid), LABEL_TMPDIR: "/tmp"}
    if how == "uid label":
        labels["org.hermes-kernel.uid"] = str(other)
    else:
        labels.pop("org.hermes-kernel.uid", None)
        labels[LABEL_STATE_FILE] = f"/tmp/pytest-hermes-kernel-{other}/run-theirs/docker-kernel-host.json"
    assert _sweeps(labels, monkeypatch) == [], "a sweep would remove another user's container"
    mine = {**labels, "org.hermes-kernel.uid": str(os.getuid())}
    mine.pop(LABEL_STATE_FILE, None)
    assert _sweeps(mine, monkeypatch) == ["kept-container"], "the same container of this user's is judged"
