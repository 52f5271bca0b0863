"""``hermes-kernel doctor docker`` (and ``ssh``) checks the image the leg will run: ``PYTEST_HERMES_IMAGE``'s when set.

Before (found by a breaker helper following the README on 2026-12-06): the doctor read
``PYTEST_HERMES_DOCKER_HOSTS`` but not ``PYTEST_HERMES_IMAGE``, and said ``image hermes-kernel-host:latest
present``, exit status 0, for a run whose ``PYTEST_HERMES_IMAGE=no-such-image:1`` then errored every docker
test with ``ImageMissingError: image no-such-image:1 is not on the docker engine``.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import cli


@pytest.fixture
def engine(docker_ready: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_HERMES_DOCKER_HOSTS", raising=False)


def test_a_bare_image_the_engine_lacks_is_a_no_with_the_way_to_make_it(
        engine: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYTEST_HERMES_IMAGE", "hermes-no-such-image:1")
    assert cli.main(["doctor", "docker"]) == 1
    out = capsys.readouterr().out
    assert "docker    NO  " in out and "image hermes-no-such-image:1 (PYTEST_HERMES_IMAGE) is not on this engine" in out, out
    assert "`docker build -t hermes-no-such-image:1 ...`" in out and "hermes-kernel-host:latest present" not in out, out


def test_an_image_the_engine_has_or_would_pull_is_ok(engine: None, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYTEST_HERMES_IMAGE", "hermes-kernel-base:bookworm")
    assert cli.main(["doctor", "docker"]) == 0
    assert "image hermes-kernel-base:bookworm present (PYTEST_HERMES_IMAGE)" in capsys.readouterr().out
    monkeypatch.setenv("PYTEST_HERMES_IMAGE", "localhost:5999/hermes-no-such-image:1")  # a registry: pulled at first use
    assert cli.main(["doctor", "docker"]) == 0
    assert "not here yet: it is pulled on first use" in capsys.readouterr().out


def test_the_ssh_line_checks_it_too(engine: None, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The ssh leg's sshd container runs the same image: its tests errored the same way, after `ssh ok`."""
    pytest.importorskip("paramiko")
    monkeypatch.delenv("PYTEST_HERMES_SSH_TARGETS", raising=False)
    monkeypatch.setenv("PYTEST_HERMES_IMAGE", "hermes-no-such-image:1")
    assert cli.main(["doctor", "ssh"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("ssh       NO  ") and "image hermes-no-such-image:1 (PYTEST_HERMES_IMAGE) is not on" in out, out
