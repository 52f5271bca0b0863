"""A failed test's kernel story showed a host secret the kernel's results never show.

The story (the report section and the JUnit properties) is said to be redacted like cell output,
but it masked only credential shapes and the kernel's own ``env`` secrets, not the host's: a
filecell backend of the user's whose repr holds the sandbox service's credentials, read from the
host's ``HK_SANDBOX_CREDS``, printed them on the story's ``where:`` line and in the
``hermes_kernel.0.where`` property (a cell printing the same value got ``[REDACTED]``). The
story is redacted with the host's secret values too now.
"""

from __future__ import annotations

import pytest

from tests.regressions.test_handed_b43_secrets_never_leak import CANARY, leaks

CONFTEST = """
import os
import shutil
import tempfile

import pytest

from pytest_hermes_kernel.transports import FileCellTransport
from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend


class SandboxBackend(LocalShellBackend):
    def __init__(self, creds):
        super().__init__()
        self.creds = creds

    def __repr__(self):
        return f"SandboxBackend(region=eu, creds={self.creds})"


@pytest.fixture
def hermes_transport():
    root = tempfile.mkdtemp(prefix="hk-story-")
    transport = FileCellTransport(SandboxBackend(os.environ["HK_SANDBOX_CREDS"]), root=root)
    yield transport
    transport.close()
    shutil.rmtree(root)  # (it stayed in /tmp, one a run)
"""

INNER = """
import os

def test_fails(hermes_kernel):
    r = hermes_kernel.execute("print('x')")
    assert r.status == "error", r
"""


def test_a_host_secret_in_the_story_is_redacted(pytester: pytest.Pytester, run, monkeypatch) -> None:
    monkeypatch.setenv("HK_SANDBOX_CREDS", CANARY)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=INNER)

    result = run("--junitxml=out.xml", "-p", "no:randomly")

    result.assert_outcomes(failed=1)
    text = "\n".join(result.outlines + result.errlines)
    assert "where: filecell SandboxBackend(region=eu, creds=[REDACTED]) pid" in text, text[-3000:]
    assert not leaks(text), [line for line in result.outlines if leaks(line)][:3]
    xml = (pytester.path / "out.xml").read_bytes()
    assert b"hermes_kernel.0.where" in xml and not leaks(xml)
