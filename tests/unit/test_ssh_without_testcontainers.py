"""paramiko and the docker SDK installed without testcontainers (``pip install paramiko docker``,
not the ``ssh`` extra): ``hermes-kernel doctor`` said ``ssh ok``, and every ssh test errored at
its kernel's start with a traceback ending ``ModuleNotFoundError: No module named
'testcontainers'`` (the sshd container is started through it). Now the transport is unavailable
at once, in one line naming the extra, as without paramiko: the ssh leg skips saying so, and
doctor says ``NO``. An explicit ``target=`` host needs no container, so no testcontainers.
Found by the breaker session that installed the extras one package at a time (2026-12-05)."""

from __future__ import annotations

import sys
import uuid

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.transports import close_transport, make_transport


@pytest.fixture
def no_testcontainers(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "testcontainers" or n.startswith("testcontainers.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "testcontainers", None)  # `import testcontainers...` raises ImportError


def test_the_ssh_transport_without_testcontainers_is_unavailable_in_one_line(no_testcontainers) -> None:
    with pytest.raises(TransportUnavailableError) as refused:
        make_transport("ssh", run_id=f"test-{uuid.uuid4().hex}")
    message = str(refused.value)
    assert message.startswith("the ssh transport needs a package that is not installed: "), message
    assert "testcontainers" in message and "Hint: pip install " in message and "[ssh]" in message, message
    assert "\n" not in message, message


def test_an_ssh_target_of_ones_own_needs_no_testcontainers(no_testcontainers) -> None:
    transport = make_transport("ssh", target="someone@127.0.0.1:1", run_id=f"test-{uuid.uuid4().hex}")
    close_transport(transport)


def test_doctor_says_ssh_no_naming_testcontainers_and_the_extra(no_testcontainers, capsys) -> None:
    assert main(["doctor", "ssh"]) == 1

    out = capsys.readouterr().out.splitlines()
    assert out[0] == "ssh       NO  testcontainers is not installed", out
    assert out[1].strip().startswith("Hint: pip install ") and out[1].strip().endswith("[ssh]'"), out
