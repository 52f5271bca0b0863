"""A pytest run on ``--hermes-ssh-targets`` whose ``--hermes-ssh-known-hosts`` file holds an old
key for the host (the sshd was recreated on the same port) must say which file holds it and how to
replace it there.

Before (found by a breaker helper following the README on 2026-12-06): each test errored with
``... but the key trusted for it (known_hosts, or seen earlier in this run) is ...; trust its new key
explicitly: SshTransport(target=..., host_key=...)``: an API call a run on the command line cannot
make (there is no option for a pinned key), and no word of which of the two known_hosts files
(``~/.ssh/known_hosts`` or the option's) held the old key; the README's ``ssh-keygen -R`` without
``-f`` edits only ``~/.ssh/known_hosts``, so it left the stale entry in the option's file.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import transport_of_its_own

paramiko = pytest.importorskip("paramiko")

SUITE = "def test_one(hermes_kernel):\n    assert hermes_kernel.execute('1 + 1').value == '2'\n"


@pytest.fixture(scope="module")
def sshd(docker_ready: None) -> Iterator[dict]:
    """A fresh sshd container of the kit (its host key, port and client key)."""
    with transport_of_its_own("ssh", server=True, container="fresh") as transport:
        yield transport.sshd.join()


def _other_key() -> str:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()


def test_the_error_names_the_file_with_the_old_key_and_the_command_that_fixes_it(
        sshd: dict, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(pytester.path))  # no ~/.ssh/known_hosts of the machine's in the way
    name = f"[127.0.0.1]:{sshd['port']}"
    known = pytester.path / "ci_known_hosts"
    known.write_text(f"{name} {_other_key()}\n")  # the key of the host as it was before it was recreated
    pytester.makepyfile(test_suite=SUITE)
    args = ["-p", "no:cacheprovider", "--hermes-transport=ssh", f"--hermes-ssh-targets={sshd['user']}@127.0.0.1:"
            f"{sshd['port']}", f"--hermes-ssh-key={sshd['key_file']}", f"--hermes-ssh-known-hosts={known}"]
    refused = pytester.runpytest_subprocess(*args, timeout=120)
    text = refused.stdout.str()
    assert refused.ret == 1 and f"the ssh host key of {name} changed" in text, text
    assert f"the key trusted for it in {known} is ssh-ed25519" in text, text
    command = f"ssh-keygen -R '{name}' -f {known}"
    assert f"`{command}`" in text, text
    subprocess.run(shlex.split(command), check=True, capture_output=True)  # the fix, as the message says it
    add = f"ssh-keyscan -p {sshd['port']} 127.0.0.1 >> {known}"  # it printed the key only, adding nothing
    assert f"`{add}`" in text, text
    subprocess.run(add, shell=True, check=True, capture_output=True)
    fixed = pytester.runpytest_subprocess(*args, timeout=120)
    fixed.assert_outcomes(passed=1)


def test_a_key_in_the_home_known_hosts_is_named_there(sshd: dict, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_hermes_kernel import KernelStartError, start_kernel
    from pytest_hermes_kernel.containers.keys import load_private_key
    from pytest_hermes_kernel.transports import SshTransport

    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir(mode=0o700)
    name = f"[127.0.0.1]:{sshd['port']}"
    (tmp_path / ".ssh" / "known_hosts").write_text(f"{name} {_other_key()}\n")
    transport = SshTransport(target=f"{sshd['user']}@127.0.0.1:{sshd['port']}",
                             pkey=load_private_key(Path(sshd["key_file"]).read_text()))
    try:
        with pytest.raises(KernelStartError) as info:
            start_kernel(transport, start_timeout=20)
    finally:
        transport.close()
    text = str(info.value)
    assert "the key trusted for it in ~/.ssh/known_hosts is" in text, text
    assert f"`ssh-keygen -R '{name}' -f ~/.ssh/known_hosts`" in text, text
