"""``hermes-kernel sweep`` run while another process's sweep removes the same dead run's container
(two terminals, or a session's sweep at its first docker use beside the command): the dry run had
listed ``would remove container ...``, and the sweep then printed no line for it and summed up
``0 containers``, as if there had been nothing to remove. The engine said the container was gone
(404) or its removal already in progress (409, what two sweeps of one dead run at once get):
the sweep now says so for the container and in its summary."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import requests

docker = pytest.importorskip("docker")

from pytest_hermes_kernel.cli import main  # noqa: E402
from pytest_hermes_kernel.containers import engines  # noqa: E402
from pytest_hermes_kernel.containers.labels import LABEL_HOST_START, run_labels  # noqa: E402

CONTAINER = "d" * 64


def _refusal(status: int, text: str) -> Exception:
    response = requests.Response()
    response.status_code = status
    cls = docker.errors.NotFound if status == 404 else docker.errors.APIError
    return cls(f"{status} Client Error", response=response, explanation=text)


class _Engine:
    """A docker engine holding one dead run's container, which another sweep removes first."""

    def __init__(self, refusal: Exception | None) -> None:
        self.api = self
        self.refusal = refusal
        self.labels = {**run_labels(run_id="dead-run", worker_id="master", role="docker-kernel-host"),
                       LABEL_HOST_START: "1.000"}  # this pid's host, started long before: a pid reused, the host gone

    def containers(self, all: bool, filters: dict) -> list[dict]:  # noqa: A002 - docker-py's name
        return [{"Id": CONTAINER, "Labels": self.labels}]

    def remove_container(self, container_id: str, force: bool, v: bool) -> None:
        if self.refusal is not None:
            raise self.refusal

    def close(self) -> None:
        pass


@pytest.fixture
def engine_with(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    def use(refusal: Exception | None) -> None:
        monkeypatch.setattr(engines, "engine_client", lambda url, **kw: _Engine(refusal))
        monkeypatch.setattr(engines, "engine_url", lambda client: "unix:///fake/docker.sock")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the run files this user's sweeps look at
    return use


@pytest.mark.parametrize("refusal", [
    _refusal(409, f"removal of container {CONTAINER} is already in progress"),
    _refusal(404, f"No such container: {CONTAINER}"),
], ids=["removal-in-progress", "gone"])
def test_the_sweep_says_another_sweep_removed_it(engine_with, capsys: pytest.CaptureFixture[str], refusal) -> None:
    engine_with(None)
    assert main(["sweep", "--dry-run", "containers"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "would remove container dddddddddddd on unix:///fake/docker.sock (no live process uses it)",
        "sweep (dry run, nothing removed): 1 container"]

    engine_with(refusal)
    assert main(["sweep", "containers"]) == 0

    assert capsys.readouterr().out.splitlines() == [
        "container dddddddddddd on unix:///fake/docker.sock: already removed, or being removed, by another "
        "process (another sweep)",
        "sweep: 0 containers (1 container was already removed, or being removed, by another process)"]


def test_a_sweep_that_removes_it_itself_says_only_that(engine_with, capsys: pytest.CaptureFixture[str]) -> None:
    engine_with(None)
    assert main(["sweep", "containers"]) == 0

    assert capsys.readouterr().out.splitlines() == [
        "removed container dddddddddddd on unix:///fake/docker.sock (no live process uses it)",
        "sweep: 1 container"]
