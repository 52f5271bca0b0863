"""Seen by a new user: with docker-py 7.0.0 installed (a later ``pip install`` downgraded it; pip
only warns), ``hermes-kernel doctor`` said ``docker NO too old: docker 7.0.0 (docker>=7.1 needed)``
with ``Hint: pip install -U 'docker>=7.1'``, but each docker test of ``pytest
--hermes-transport=docker -rs`` skipped with ``the docker engine at unix:///var/run/docker.sock
... did not answer: Error while fetching server API version: Not supported URL scheme
http+docker. Hint: is dockerd running there, and may this user use its socket?``: the engine was
running; the SDK was too old to talk to it. Now the docker transport (and the ssh transport's
sshd container) says the SDK is too old, with the upgrade, as the doctor does."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.containers import engines
from pytest_hermes_kernel.errors import TransportUnavailableError


@pytest.fixture
def old_sdk_that_cannot_talk(monkeypatch: pytest.MonkeyPatch) -> None:
    """docker-py 7.0 beside requests 2.32: every client fails its first call, as it did here."""
    docker = pytest.importorskip("docker")

    def fails(*args: object, **kwargs: object) -> None:
        raise docker.errors.DockerException(
            "Error while fetching server API version: Not supported URL scheme http+docker")

    monkeypatch.setattr(engines, "too_old", lambda *names: ["docker 7.0.0 (docker>=7.1 needed)"]
                        if "docker" in names else [])
    monkeypatch.setattr(docker, "from_env", fails)
    monkeypatch.setattr(docker, "DockerClient", fails)
    monkeypatch.setattr(engines, "_check_socket", lambda target, where: None)  # a socket there, as here


def test_the_engine_client_names_the_old_sdk_and_its_upgrade(old_sdk_that_cannot_talk: None) -> None:
    with pytest.raises(TransportUnavailableError) as raised:
        engines.engine_client(None)
    said = str(raised.value)
    assert "too old: docker 7.0.0 (docker>=7.1 needed)" in said, said
    assert "pip install -U 'docker>=7.1'" in said, said
    assert "is dockerd running" not in said, said


def test_the_doctor_names_it_once(old_sdk_that_cannot_talk: None) -> None:
    from pytest_hermes_kernel import cli

    check = cli._with_too_old(cli._check_docker((None,)))
    assert not check.ok and check.detail.count("too old: docker 7.0.0") == 1, check.detail
    assert "is dockerd running" not in check.detail + (check.hint or ""), check
