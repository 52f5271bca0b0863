"""``hermes_host_sigkill`` on a backend registered with ``register_transport`` in a conftest.py.

The marker runs the kernel's host in a separate process (the host harness), which made its
transport by name and knew only the built-in names: on the backend's leg the test errored at
setup with ``ConfigError: unknown transport 'mine' (known: local, docker, ssh, filecell)``, and
a backend registered over a built-in name (``"local"``) was never run there (the built-in one
was). Now the harness host registers the same factory, and one it cannot be handed is a
``ConfigError`` that says what to register instead, shown as the test's error alone (it sat
under 60 lines of the plugin's and the harness's source).
"""

from __future__ import annotations

CONFTEST = """
from pytest_hermes_kernel.transports import register_transport
from pytest_hermes_kernel.transports.local import LocalTransport


class Mine(LocalTransport):
    name = "mine"

    def launch(self, spec):
        launched = super().launch(spec)
        launched.label = "mine: " + launched.label
        return launched


register_transport("mine", {factory})
"""

TEST = """
import pytest
from pytest_hermes_kernel import HostGoneError


@pytest.mark.hermes_host_sigkill(during_cell=2, delay=0.3)
def test_host_killed(hermes_kernel):
    assert hermes_kernel.transport.name == "mine"
    hermes_kernel.execute("x = 1")
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("import time; time.sleep(30)")
"""


def test_a_registered_transport_runs_under_hermes_host_sigkill(pytester, run) -> None:
    pytester.makeconftest(CONFTEST.format(factory="Mine"))
    pytester.makepyfile(test_it=TEST)

    result = run("-q", "--hermes-transport=mine", "--hermes-leak-check=error")

    result.assert_outcomes(passed=1)
    assert "Error: unknown transport" not in result.stdout.str()


def test_a_factory_the_harness_cannot_be_handed_is_named(pytester, run) -> None:
    pytester.makeconftest(CONFTEST.format(factory="lambda **options: Mine(**options)"))
    pytester.makepyfile(test_it=TEST)

    result = run("-q", "--hermes-transport=mine", "--hermes-leak-check=error")

    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "makes the registered transport 'mine' with its factory" in text, text[-3000:]
    assert "register a module-level class or function" in text and "Error: unknown transport" not in text, text[-3000:]
    error = text[text.index("ERROR at setup"):text.index("short test summary")]
    assert "def _registration" not in error and len(error.splitlines()) < 8, error  # the message, not 60 lines of source


def test_an_unregistered_override_under_hermes_host_sigkill_says_to_register_it(pytester, run) -> None:
    """A ``hermes_transport`` fixture's own instance cannot cross into the harness process."""
    pytester.makeconftest(CONFTEST.replace('register_transport("mine", {factory})', "").replace(
        "class Mine", "import pytest\n\n\n@pytest.fixture\ndef hermes_transport():\n    t = Mine()\n    yield t\n"
        "    t.close()\n\n\nclass Mine"))
    pytester.makepyfile(test_it=TEST)

    result = run("-q", "--hermes-leak-check=error")

    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "no transport is registered as 'mine'" in text and "register_transport('mine', factory)" in text, text[-3000:]
    error = text[text.index("ERROR at setup"):text.index("short test summary")]
    assert "def _registration" not in error and len(error.splitlines()) < 8, error
