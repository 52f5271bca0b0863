"""``hermes-kernel build-image`` with no docker engine says so in one line with a hint, exit
status 1: it printed a 112-line urllib3 traceback ending in ``ImageBuildError: no docker engine:
Error while fetching server API version: ('Connection aborted.', FileNotFoundError(...))`` and
the build's hint on debootstrap, where ``doctor``, ``sweep`` and pytest said it in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_hermes_kernel.cli import main


def test_build_image_without_an_engine_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    sock = tmp_path / "no-engine.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")

    status = main(["build-image", "--tag", "hermes-kernel-never-built:1"])

    out, err = capsys.readouterr()
    assert status == 1 and out == ""
    assert err == (f"hermes-kernel build-image: no docker engine: the docker engine at unix://{sock} (DOCKER_HOST) "
                   f"did not answer: cannot connect to {sock}: No such file or directory. Hint: is dockerd running "
                   "there, and may this user use its socket? is the URL right?\n")


def test_build_image_without_the_docker_sdk_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "docker", None)  # `import docker` raises ImportError

    assert main(["build-image", "--tag", "hermes-kernel-never-built:1"]) == 1
    from pytest_hermes_kernel.containers.images import pip_install_extra  # its command: test_install_hints.py

    assert capsys.readouterr().err == ("hermes-kernel build-image: the docker SDK is not installed. "
                                       f"Hint: {pip_install_extra('docker')}\n")
