"""Seen, with ``SshTransport(target=...)``: a ``key_filename`` that is missing, a directory, a
public key, no key at all or encrypted (the transport takes no passphrase) was found only at the
first kernel's start, as ``KernelStartError: cannot reach ssh host ...: PasswordRequiredException:
Private key file is encrypted`` with the hint "is the host up and the key accepted?" and, for an
encrypted key, without the file's name; a valid key the host does not accept read ``SSHException:
Invalid key`` (paramiko's try of another key type, not the refusal). A ``host_key=`` pin that is
no ``"<type> <base64>"`` raised a bare ``ValueError`` (one word), ``binascii.Error`` (bad base64)
or paramiko's ``UnknownKeyType`` at the first start, and a ``known_hosts`` file that is no
known_hosts file paramiko's ``InvalidHostKey``.

Now each is a :class:`ConfigError` naming the file or the value: the pin when the transport is made,
the files when they are read, at each connect; a key the host refuses is an
``AuthenticationException``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_hermes_kernel import ConfigError, KernelStartError, start_kernel
from pytest_hermes_kernel.containers.keys import generate_keypair
from pytest_hermes_kernel.transports.ssh.connection import SshConnection
from pytest_hermes_kernel.transports.ssh.address import SshTarget
from pytest_hermes_kernel.transports.ssh.transport import SshTransport

TARGET = "hermes@127.0.0.1:1"  # a closed loopback port: every bad case fails before it is dialled


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    private, public = generate_keypair()
    (tmp_path / "id").write_text(private)
    (tmp_path / "id.pub").write_text(public)
    (tmp_path / "notes").write_text("not a key\n")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret-words", "-f", str(tmp_path / "enc")], check=True)
    return {name: str(tmp_path / name) for name in ("id", "id.pub", "notes", "enc", "missing")} | {"dir": str(tmp_path)}


@pytest.mark.parametrize("name, says", [("missing", "cannot be read"), ("dir", "cannot be read"),
                                        ("id.pub", "is no private key"), ("notes", "is no private key"),
                                        ("enc", "is encrypted")])
def test_a_key_file_that_cannot_log_in_is_refused_naming_it(files, name, says):
    transport = SshTransport(target=TARGET, key_filename=files[name])
    try:
        with pytest.raises(ConfigError) as exc:
            start_kernel(transport)
    finally:
        transport.close()
    assert says in str(exc.value) and repr(files[name]) in str(exc.value)


def test_a_key_file_that_is_a_private_key_is_taken(files):
    transport = SshTransport(target=TARGET, key_filename=files["id"])
    try:
        with pytest.raises(KernelStartError, match="cannot reach ssh host"):  # the key was read: port 1 refused
            start_kernel(transport)
    finally:
        transport.close()


@pytest.mark.parametrize("pin", ["garbage", "ssh-ed25519 !!!notbase64", "ssh-foo AAAA", "ssh-ed25519 AAAA", ""])
def test_a_host_key_pin_that_is_no_key_is_refused_naming_it(files, pin):
    with pytest.raises(ConfigError, match="host_key must be"):
        SshTransport(target=TARGET, key_filename=files["id"], host_key=pin)


def test_a_host_key_pin_of_the_known_hosts_form_is_taken(files):
    pin = " ".join(Path(files["id.pub"]).read_text().split()[:2])
    SshTransport(target=TARGET, key_filename=files["id"], host_key=pin).close()
    SshTransport(target=TARGET, key_filename=files["id"], host_key=pin + " comment").close()


def test_a_known_hosts_file_that_is_none_is_refused_naming_it(files):
    with pytest.raises(ConfigError) as exc:
        SshConnection(SshTarget.parse(TARGET), key_filename=files["id"], known_hosts=files["id"])
    assert "is no known_hosts file" in str(exc.value) and repr(files["id"]) in str(exc.value)
