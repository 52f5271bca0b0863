"""``hermes-kernel doctor ssh`` checks the hosts of ``PYTEST_HERMES_SSH_TARGETS`` when it is set: those
are what the ssh leg logs in to then, with ``PYTEST_HERMES_SSH_KEY`` and ``PYTEST_HERMES_SSH_KNOWN_HOSTS``.

Before (found by a breaker helper following the README on 2026-12-06): the doctor, which the README
gives as a CI job's first step (``doctor ${{ matrix.transport }}``: the leg's why, before any test),
read ``PYTEST_HERMES_DOCKER_HOSTS`` but not the ssh variables, and checked the sshd container the leg
does not use: with ``PYTEST_HERMES_SSH_TARGETS=hermes@127.0.0.1:1`` (nothing listens) it said
``ssh ok paramiko ...; sshd container via docker``, exit status 0, and every ssh test of the job then
errored ``cannot reach ssh host hermes@127.0.0.1:1``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.cli import main
from tests.support import transport_of_its_own

pytest.importorskip("paramiko")
pytest.importorskip("testcontainers")


@pytest.fixture(scope="module")
def sshd(docker_ready: None) -> Iterator[dict]:
    """A fresh sshd container of the kit (its host key, port and client key)."""
    with transport_of_its_own("ssh", server=True, container="fresh") as transport:
        yield transport.sshd.join()


def test_a_target_that_does_not_answer_is_a_no_naming_it(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYTEST_HERMES_SSH_TARGETS", "hermes@127.0.0.1:1")
    assert main(["doctor", "ssh"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("ssh       NO  PYTEST_HERMES_SSH_TARGETS (no sshd container): hermes@127.0.0.1:1: "
                          "cannot reach ssh host hermes@127.0.0.1:1"), out
    assert "sshd container via docker" not in out, out


def test_each_target_is_logged_in_to_with_the_runs_key_and_known_hosts(
        sshd: dict, tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd['port']} {sshd['host_key']}\n")
    target = f"{sshd['user']}@127.0.0.1:{sshd['port']}"
    monkeypatch.setenv("HOME", str(tmp_path))  # no key or known_hosts of the machine's own
    monkeypatch.setenv("PYTEST_HERMES_SSH_TARGETS", target)
    monkeypatch.setenv("PYTEST_HERMES_SSH_KEY", sshd["key_file"])
    monkeypatch.setenv("PYTEST_HERMES_SSH_KNOWN_HOSTS", str(known))
    assert main(["doctor", "ssh"]) == 0, capsys.readouterr().out
    assert f"ok  PYTEST_HERMES_SSH_TARGETS (no sshd container): {target} logs in" in capsys.readouterr().out

    monkeypatch.setenv("PYTEST_HERMES_SSH_TARGETS", f"{target}, hermes@127.0.0.1:1")  # one of two is down
    assert main(["doctor", "ssh"]) == 1
    out = capsys.readouterr().out
    assert f"{target} logs in; hermes@127.0.0.1:1: cannot reach" in out, out
