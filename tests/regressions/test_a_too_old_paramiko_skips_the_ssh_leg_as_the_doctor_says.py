"""Seen by a new user following README's install: with paramiko 3.5.1 installed (a later ``pip
install`` downgraded it; pip only warns), ``hermes-kernel doctor`` said ``ssh NO too old: paramiko
3.5.1 (paramiko>=4.0 needed)`` with ``Hint: pip install -U 'paramiko>=4.0'``, and README said the
docker and ssh legs then skip saying the same; yet ``pytest --hermes-transport=ssh`` ran the leg
(on paramiko 3.x its key files warned ``CryptographyDeprecationWarning``, an error under
``filterwarnings = error``). Now the docker and ssh transports refuse a package of their extra
that is older than this package declares, naming it and the upgrade, so the leg skips (or fails
under ``--hermes-require-transports``) as the doctor says."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import cli
from pytest_hermes_kernel.containers import engines
from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.transports import make_transport

OLD = {"paramiko": "paramiko 3.5.1 (paramiko>=4.0 needed)", "testcontainers": "testcontainers 4.3.0 (testcontainers>=4.4 needed)"}


@pytest.fixture
def old_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``importlib.metadata`` said here with paramiko 3.5.1 and testcontainers 4.3.0 installed."""
    monkeypatch.setattr(engines, "too_old", lambda *names: [OLD[n] for n in names if n in OLD])


@pytest.mark.parametrize(("name", "said", "upgrade"), [
    ("ssh", "too old: paramiko 3.5.1 (paramiko>=4.0 needed), testcontainers 4.3.0", "'paramiko>=4.0' 'testcontainers>=4.4'"),
    ("docker", "too old: testcontainers 4.3.0 (testcontainers>=4.4 needed)", "'testcontainers>=4.4'"),
])
def test_the_leg_is_refused_naming_the_package_and_its_upgrade(old_packages: None, name: str, said: str,
                                                                 upgrade: str) -> None:
    with pytest.raises(TransportUnavailableError) as raised:
        make_transport(name)
    text = str(raised.value)
    assert text.startswith(f"the {name} transport cannot run here: {said}"), text
    assert text.endswith(f"Hint: pip install -U {upgrade}"), text


def test_the_doctor_says_no_for_the_same_reason(old_packages: None) -> None:
    check = cli.doctor(["ssh"])[0]
    assert not check.ok and check.detail.startswith("too old: paramiko 3.5.1 (paramiko>=4.0 needed)"), check
