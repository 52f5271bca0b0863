"""``hermes-kernel doctor``'s hint when the docker transport cannot run tells a user of the
installed package what to do: it said ``.ci/run does both``, a script of this repository that a
``pip install`` does not ship. Now: start a docker engine and check ``docker info`` (the image
needs no registry: it is built here), or, when the docker SDK is missing, install the extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_hermes_kernel.cli import ENGINES_ENV, main


@pytest.fixture
def no_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DOCKER_HOST at a socket nothing listens on."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    monkeypatch.delenv(ENGINES_ENV, raising=False)


def hint_of(out: str) -> str:
    return next(line.strip() for line in out.splitlines() if line.strip().startswith("Hint: "))


def test_the_hint_for_an_engine_that_does_not_answer_says_how_to_start_one(no_engine, capsys):
    assert main(["doctor", "docker"]) == 1

    hint = hint_of(capsys.readouterr().out)
    assert ".ci/run" not in hint
    assert hint.startswith("Hint: start a docker engine (`sudo systemctl start docker`"), hint
    assert "`docker info` answers as this user" in hint
    assert "built on this machine on first use" in hint and "`hermes-kernel build-image`" in hint
    assert "pip install" not in hint  # the SDK is there: installing it again would not help


def test_the_hint_without_the_docker_sdk_says_which_extra_to_install(no_engine, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "docker", None)  # `import docker` raises ImportError

    assert main(["doctor", "docker"]) == 1

    out = capsys.readouterr().out
    assert "the docker SDK is not installed" in out
    from pytest_hermes_kernel.containers.images import pip_install_extra

    assert hint_of(out) == (f"Hint: {pip_install_extra('docker')} (the docker SDK), "
                            "then run `hermes-kernel doctor` again")  # its command: tests/unit/test_install_hints.py


def test_with_several_engines_the_one_line_names_those_that_answer_too(tmp_path, capsys, monkeypatch):
    from pytest_hermes_kernel import cli

    answers = {"unix:///good.sock": (True, "docker engine 28.0 at unix:///good.sock")}
    monkeypatch.setattr(cli, "_check_docker_engine",
                        lambda url=None: answers.get(url, (False, f"the docker engine at {url} did not answer")))
    monkeypatch.setattr(cli, "_check_image", lambda url=None: (True, "image present", ""))

    assert main(["doctor", "docker", "--docker-hosts", f"unix:///good.sock,unix://{tmp_path}/gone.sock"]) == 1

    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("docker") and " NO " in line, line
    assert f"unix://{tmp_path}/gone.sock did not answer" in line, line
    assert "docker engine 28.0 at unix:///good.sock (this one answers)" in line, line


def test_with_several_engines_the_hint_names_the_one_that_does_not_answer(tmp_path, capsys, monkeypatch):
    """``--docker-hosts default,unix:///.../engine2.sock`` with the default engine up: the hint said to
    start a docker engine, install docker.io and build the image, though one engine answered and
    had the image; README's fix is to start that engine or leave it out of the list."""
    from pytest_hermes_kernel import cli

    answers = {None: (True, "docker engine 28.0 at unix:///var/run/docker.sock")}
    monkeypatch.setattr(cli, "_check_docker_engine",
                        lambda url=None: answers.get(url, (False, f"the docker engine at {url} did not answer")))
    monkeypatch.setattr(cli, "_check_image", lambda url=None: (True, "image present", ""))

    assert main(["doctor", "docker", "--docker-hosts", f"default,unix://{tmp_path}/engine2.sock"]) == 1

    hint = hint_of(capsys.readouterr().out)
    assert hint == (f"Hint: start the engine that did not answer (unix://{tmp_path}/engine2.sock), or leave it out "
                    f"of --docker-hosts ({ENGINES_ENV}): the others answer"), hint


def test_an_engine_named_alone_that_does_not_answer_is_named_in_the_hint(tmp_path, capsys, monkeypatch):
    """``PYTEST_HERMES_DOCKER_HOSTS=tcp://127.0.0.1:1`` (an engine the user named, the environment's
    up): the hint said to start docker with systemctl, install docker.io and check ``docker info``,
    which answered (it asks the environment's engine); the fix is that engine or that URL."""
    from pytest_hermes_kernel import cli

    monkeypatch.setattr(cli, "_check_docker_engine",
                        lambda url=None: (url is None, f"the docker engine at {url} did not answer"))
    monkeypatch.setenv(ENGINES_ENV, f"unix://{tmp_path}/engine2.sock")

    assert main(["doctor", "docker"]) == 1

    hint = hint_of(capsys.readouterr().out)
    assert hint == (f"Hint: start the engine that did not answer (unix://{tmp_path}/engine2.sock), or fix it in "
                    f"--docker-hosts ({ENGINES_ENV})"), hint


def test_filecell_without_the_docker_sdk_does_not_offer_its_docker_exec_backend(capsys, monkeypatch):
    """It said ``docker exec backend when docker is up`` with no SDK to ask the engine through
    (found by the fresh-install round of 2026-12-05)."""
    monkeypatch.setitem(sys.modules, "docker", None)
    from pytest_hermes_kernel.containers.images import pip_install_extra

    assert main(["doctor", "filecell"]) == 0  # the local shell backend needs no SDK

    line = capsys.readouterr().out.splitlines()[0]
    assert line.endswith(f"; docker exec backend needs the docker SDK: {pip_install_extra('docker')}"), line
    assert "when docker is up" not in line


def test_the_ssh_hint_without_docker_names_the_pytest_option(no_engine, capsys):
    """Without docker, ``doctor ssh`` said only ``point the ssh transport at a host:
    SshTransport(target='user@host:port')``: a class of the API, while a pytest user (the README's
    walkthroughs) points the ssh leg at a host with ``--hermes-ssh-targets``. It names both now."""
    assert main(["doctor", "ssh"]) == 1

    hint = hint_of(capsys.readouterr().out)
    assert "--hermes-ssh-targets=user@host:port" in hint, hint
    assert "SshTransport(target='user@host:port')" in hint, hint
