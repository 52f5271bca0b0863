"""A password written into an ssh target (``hermes:PASSWORD@host:22``, the habit of URLs) was
taken as part of the user name: the kit logs in with keys only, so the login failed, and the
password showed in every message that named the target: the failed test's
``KernelStartError: ssh transport: cannot reach ssh host hermes:PASSWORD@127.0.0.1:1``, its
traceback, the JUnit XML (twice). ``ssh://hermes@host`` was taken as the user ``ssh://hermes``.
A user name cannot hold a ``:``: such a target is a ``ConfigError`` now, the password masked.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import ConfigError
from pytest_hermes_kernel.transports.ssh.address import SshTarget
from pytest_hermes_kernel.transports.ssh.targets import parse_targets
from pytest_hermes_kernel.transports.ssh.transport import SshTransport

PASSWORD = "ssh-target-" + "canary-pw-3c"


@pytest.mark.parametrize("text, shown", [
    (f"hermes:{PASSWORD}@127.0.0.1:22", "'hermes:[REDACTED]@127.0.0.1:22'"),
    (f"hermes:{PASSWORD}@with-at@127.0.0.1:22", "'hermes:[REDACTED]@127.0.0.1:22'"),
    (f"hermes:{PASSWORD}:with-colon@127.0.0.1:22", "'hermes:[REDACTED]@127.0.0.1:22'"),  # (its first part showed)
    (f"ssh://hermes:{PASSWORD}@127.0.0.1:22", "'ssh://hermes:[REDACTED]@127.0.0.1:22'"),
    ("ssh://hermes@127.0.0.1:22", "'ssh://hermes@127.0.0.1:22'"),
])
def test_a_target_with_a_password_or_a_scheme_is_refused_without_showing_it(text, shown):
    for make in (SshTarget.parse, lambda t: SshTransport(target=t), lambda t: parse_targets(f"hermes@127.0.0.1:22,{t}")):
        with pytest.raises(ConfigError) as refused:
            make(text)
        message = str(refused.value)
        assert PASSWORD not in message and shown in message and "keys only" in message, message


def test_the_run_refuses_it_before_anything_starts(pytester: pytest.Pytester):
    pytester.makepyfile(test_ssh="def test_t(hermes_kernel):\n    hermes_kernel.execute('1')\n")

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hermes-transport=ssh", "--junitxml=out.xml",
                                           f"--hermes-ssh-targets=hermes:{PASSWORD}@127.0.0.1:1")

    text = "\n".join(result.outlines + result.errlines)
    assert result.ret != 0 and "no password" in text and PASSWORD not in text, text[-2000:]
    xml = pytester.path / "out.xml"
    assert not xml.exists() or PASSWORD not in xml.read_text()
