"""Seen: ``SshTransport(target="hermes@127.0.0.1:99999")`` connected to port 34463 (the OS took
the port modulo 65536: another service's port), port ``0`` was taken, ``host:²`` raised a bare
``ValueError: invalid literal for int()``, ``host:٣٣`` ran as port 33, a NUL in the host connected
to ``127.0.0.0`` (the name was cut there), and a host or user with spaces or a newline, an empty
user (``@host``), an unclosed ``[::1`` or ``host:22:33`` (no IPv6 address) were taken as given
and failed later, at the first kernel's start, as an unreachable host.

Now each is a :class:`ConfigError` naming the target, when the transport is made (and for
``--hermes-ssh-targets``, before the run starts).
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import ConfigError
from pytest_hermes_kernel.transports.ssh.address import SshTarget
from pytest_hermes_kernel.transports.ssh.targets import parse_targets
from pytest_hermes_kernel.transports.ssh.transport import SshTransport

BAD = ["hermes@127.0.0.1:99999", "hermes@127.0.0.1:65536", "hermes@127.0.0.1:0", "hermes@h:\u00b2", "hermes@h:\u0663\u0663",
       "hermes@127.0.0\x00.1:22", "hermes@ho st:22", "hermes@ :22", "her mes@h:22", "a\nb@h:22", "@h:22",
       "hermes@[::1", "hermes@h:22:33", "hermes@[::1]x:22"]


@pytest.mark.parametrize("text", BAD)
def test_a_target_that_is_no_address_is_a_config_error_naming_it(text):
    with pytest.raises(ConfigError) as exc:
        SshTarget.parse(text)
    assert repr(text) in str(exc.value)
    with pytest.raises(ConfigError):
        SshTransport(target=text)
    with pytest.raises(ConfigError):
        parse_targets(f"hermes@127.0.0.1:22,{text}")


@pytest.mark.parametrize("text, host, port, user", [
    ("hermes@127.0.0.1:65535", "127.0.0.1", 65535, "hermes"), ("h", "h", 22, None), ("ci@build-1.example:2222", "build-1.example", 2222, "ci"),
    ("::1", "::1", 22, None), ("u@[::1]:1", "::1", 1, "u"), ("a@b@h:22", "h", 22, "a@b"),
])
def test_the_forms_of_a_target_still_parse(text, host, port, user):
    assert SshTarget.parse(text) == SshTarget(host=host, port=port, user=user)
