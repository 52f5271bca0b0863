"""Seen: ``--hermes-ssh-targets=hermes@[::1]:2222`` (or ``targets=["hermes@[::1]:2222"]``) ran
its kernels against port 22: a target was written back as ``hermes@::1:2222``, without the
brackets, and read again (the targets list, a kept kernel's record) as host ``::1:2222`` on the
default port. Now an IPv6 host is written in brackets, so the text reads back as the same target.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.transports.ssh.address import SshTarget
from pytest_hermes_kernel.transports.ssh.targets import parse_targets, ssh_transport


@pytest.mark.parametrize("text, host, port", [("hermes@[::1]:2222", "::1", 2222), ("[::1]:22", "::1", 22),
                                              ("hermes@127.0.0.1:2222", "127.0.0.1", 2222)])
def test_a_target_written_out_reads_back_as_the_same_target(text, host, port):
    target = SshTarget.parse(text)
    assert (target.host, target.port) == (host, port)
    assert SshTarget.parse(str(target)) == target


def test_the_targets_setting_keeps_an_ipv6_hosts_port():
    assert parse_targets("hermes@[::1]:2222, hermes@[::1]:2223") == ("hermes@[::1]:2222", "hermes@[::1]:2223")
    transport = ssh_transport(targets=["hermes@[::1]:2222"], key_filename=None)
    try:
        assert (transport.target.host, transport.target.port) == ("::1", 2222)  # type: ignore[attr-defined]
    finally:
        transport.close()
