"""A usage error of a ``hermes-kernel`` subcommand shows that subcommand's usage line: ``sweep
--kept --kernel nosuch``, ``ls --idz`` and ``doctor NAME`` printed the top-level one
(``usage: hermes-kernel [-h] {doctor,build-image,...} ...``), which says nothing of the options
that were wrong. The exit status stays argparse's 2."""

from __future__ import annotations

from pathlib import Path

import re

import pytest

from pytest_hermes_kernel.cli import main


@pytest.mark.parametrize(("argv", "usage", "error"), [
    (["sweep", "--kept", "--kernel", "nosuch"], "usage: hermes-kernel sweep ", "--kernel: no kept kernel 'nosuch'"),
    (["sweep", "--kernel", "x"], "usage: hermes-kernel sweep ", "--kernel needs --kept"),
    (["sweep", "nosuch-kind"], "usage: hermes-kernel sweep ", "unknown sweep kind nosuch-kind"),
    (["ls", "--idz"], "usage: hermes-kernel ls ", "unrecognized arguments: --idz"),
    (["exec", "some-id", "1", "--bogus"], "usage: hermes-kernel exec ", "unrecognized arguments: --bogus"),
    (["doctor", "nosuch"], "usage: hermes-kernel doctor ", "unknown transport nosuch"),
], ids=["sweep-kernel", "sweep-kernel-without-kept", "sweep-kind", "ls", "exec", "doctor"])
def test_a_subcommands_usage_error_shows_its_usage(argv: list[str], usage: str, error: str, private_tmp: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)

    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith(usage), err
    assert f"hermes-kernel {argv[0]}: error: {error}" in err, err


def test_a_misspelt_transport_of_doctor_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    """``hermes-kernel doctor dockr`` says what ``pytest --hermes-transport=dockr`` says: did you mean 'docker'?"""
    with pytest.raises(SystemExit) as exit_:
        main(["doctor", "dockr"])

    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert ("hermes-kernel doctor: error: unknown transport dockr; did you mean 'docker'? "
            "known: local, docker, ssh, filecell") in err, err


def test_a_misspelt_sweep_kind_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    """``hermes-kernel sweep contaners`` (a fresh-install helper): as ``doctor dockr`` does."""
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", "contaners"])

    assert exit_.value.code == 2
    assert ("error: unknown sweep kind contaners; did you mean 'containers'? known: run-files, containers"
            in capsys.readouterr().err)


@pytest.mark.parametrize("argv", [["doctor", "--image", "no such"], ["doctor", "--image", "MyImage:1"],
                                  ["build-image", "--tag", ""], ["build-image", "--tag", "a b"],
                                  ["build-image", "--tag", "Kernels:1"]],
                         ids=["doctor-space", "doctor-upper", "build-empty", "build-space", "build-upper"])
def test_an_image_name_docker_refuses_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """``doctor --image 'no such'`` and ``build-image --tag Kernels:1`` ended in docker's traceback
    (``docker.errors.APIError: 400 ... invalid reference format``; ``--tag ''``: ``NullResource``),
    exit status 1, after the base image was looked at."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)

    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "Traceback" not in err
    assert f"hermes-kernel {argv[0]}: error: argument {argv[1]}: {argv[2]!r} is not a docker image name" in err, err


def test_doctor_with_an_empty_image_is_a_usage_error_not_the_transports_check(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``doctor --image "$IMAGE"`` with ``IMAGE`` unset checked the transports instead, exit status 0:
    a green check of no image at all."""
    with pytest.raises(SystemExit) as exit_:
        main(["doctor", "--image", ""])

    out, err = capsys.readouterr()
    assert exit_.value.code == 2
    assert out == "" and "hermes-kernel doctor: error: argument --image: '' is not a docker image name" in err, err


@pytest.mark.parametrize(("argv", "env", "source"), [
    (["doctor", "docker", "--docker-hosts", ""], None, "--docker-hosts"),
    (["sweep", "--dry-run", "containers", "--docker-hosts", " , "], None, "--docker-hosts"),
    (["doctor", "docker"], "", "PYTEST_HERMES_DOCKER_HOSTS"),
], ids=["doctor-option", "sweep-option", "doctor-env"])
def test_an_empty_engine_list_is_a_usage_error_not_the_default_engine(
        argv: list[str], env: str | None, source: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``hermes-kernel doctor docker --docker-hosts "$HOSTS"`` with ``HOSTS`` unset (or
    ``PYTEST_HERMES_DOCKER_HOSTS`` set but empty) checked the environment's engine instead, exit
    status 0, as ``pytest --hermes-docker-hosts=`` refuses to; ``--docker-hosts ,`` named the
    plugin's option, ``--hermes-docker-hosts``, in its error."""
    if env is not None:
        monkeypatch.setenv("PYTEST_HERMES_DOCKER_HOSTS", env)

    with pytest.raises(SystemExit) as exit_:
        main(argv)

    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == "", out
    assert f"hermes-kernel {argv[0]}: error: {source} names no docker engine" in err, err


@pytest.mark.parametrize("name", ["docker", "ssh"])
@pytest.mark.parametrize("image", ["Kernels:1", "no such", "", 7])
def test_an_image_name_docker_refuses_given_in_code_is_a_config_error(name: str, image: object) -> None:
    """``make_transport("docker", image="Kernels:1")`` (or a marker's transport option) reached
    docker's ``400 invalid reference format`` only once a kernel started; now the transport is refused
    at once, before it connects to anything, naming the value."""
    from pytest_hermes_kernel.errors import ConfigError
    from pytest_hermes_kernel.transports import make_transport

    with pytest.raises(ConfigError, match=rf"{name} transport: image {re.escape(repr(image))} is not a docker image name"):
        make_transport(name, image=image)


@pytest.mark.parametrize("argv", [["sweep", "--dry-run"], ["doctor"], ["build-image"]], ids=["sweep", "doctor", "build"])
def test_ctrl_c_ends_a_command_with_one_line_and_130(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C during ``sweep``, ``doctor`` or ``build-image`` printed a traceback (``exec`` and
    ``attach`` handled it); now one line, and the shell's status for SIGINT."""
    from pytest_hermes_kernel import cli

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, {"sweep": "sweep", "doctor": "doctor", "build-image": "build_image"}[argv[0]], interrupted)
    try:
        code = cli.main(argv)
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C came out of the command as a KeyboardInterrupt: a traceback")
    assert code == 130
    out, err = capsys.readouterr()
    assert err == "hermes-kernel: interrupted\n" and "Traceback" not in out + err


def test_a_bare_command_names_the_commands_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    """``hermes-kernel`` with no command said ``error: the following arguments are required: cmd``:
    ``cmd`` is no word of the CLI. It names the commands to choose from now."""
    with pytest.raises(SystemExit) as exit_:
        main([])

    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "hermes-kernel: error: the following arguments are required: " \
           "{doctor,build-image,sweep,ls,attach,exec}" in err, err
    assert ": cmd" not in err, err
