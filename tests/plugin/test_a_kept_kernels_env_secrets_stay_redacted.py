"""``hermes-kernel exec`` and ``attach`` printed a kept kernel's ``env`` secrets whole.

In the failed test, a cell printing the kernel's ``env={"HK_KEPT_TOKEN": ...}`` value got
``[REDACTED]`` back; the same cell run on the kernel kept for post-mortem, through ``exec`` or
``attach``, printed the value itself (stdout, the value's repr and an error's traceback alike):
the later process did not know the kernel's ``env``. The record (0600, beside the token that
reaches the kernel anyway) keeps those values now, so ``exec`` and ``attach`` redact what the test
did. ``ls`` and the record's repr show none of them.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.plugin.test_keep_failed import hermes, kept_env, kept_kernel  # noqa: F401

SECRET = "kept-canary-" + "value-7c1e"
FAILING = """
import pathlib
import pytest

@pytest.mark.hermes_kernel(env={"HK_KEPT_TOKEN": pathlib.Path(__file__).with_name("canary.txt").read_text()})
def test_fails(hermes_kernel):
    import os
    pathlib.Path("kernel.json").write_text('{"id": "%s", "pid": %d}' % (hermes_kernel.kernel_id, hermes_kernel.pid))
    r = hermes_kernel.execute("import os\\nprint(os.environ['HK_KEPT_TOKEN'])")
    assert r.stdout == "[REDACTED]\\n"
    assert False, "deliberate failure"
"""


def test_exec_and_attach_redact_a_kept_kernels_env_secrets(pytester, run, kept_env):  # noqa: F811
    pytester.makepyfile(test_keep=FAILING)
    (pytester.path / "canary.txt").write_text(SECRET)

    result = run("--hermes-keep-failed")

    result.assert_outcomes(failed=1)
    kid, _ = kept_kernel(pytester)
    printed = hermes("exec", kid, "import os\nprint(os.environ['HK_KEPT_TOKEN'])")
    value = hermes("exec", kid, "os.environ['HK_KEPT_TOKEN']")
    raised = hermes("exec", kid, "raise ValueError(os.environ['HK_KEPT_TOKEN'])")
    console = hermes("attach", kid, stdin="print(os.environ['HK_KEPT_TOKEN'])\nos.environ['HK_KEPT_TOKEN'][::-1][::-1]\n")
    listed = hermes("ls")

    assert (printed.returncode, printed.stdout) == (0, "[REDACTED]\n"), printed.stdout + printed.stderr
    assert value.stdout == "'[REDACTED]'\n", value.stdout + value.stderr
    assert raised.returncode == 1 and "ValueError: [REDACTED]" in raised.stderr, raised.stderr
    assert console.stdout == "[REDACTED]\n'[REDACTED]'\n", console.stdout + console.stderr
    shown = [printed, value, raised, console, listed]
    assert not [p.args[3:] for p in shown if SECRET in p.stdout + p.stderr]
    assert SECRET not in result.stdout.str()
    kept = Path(kept_env, f"pytest-hermes-kernel-{os.getuid()}", "kept", f"{kid}.json")
    assert kept.stat().st_mode & 0o777 == 0o600


ALLOWED = """
import pytest

@pytest.mark.hermes_kernel(env_allow=["HK_ALLOWED_TOKEN"])
def test_fails(hermes_kernel):
    import pathlib
    pathlib.Path("kernel.json").write_text('{"id": "%s", "pid": %d}' % (hermes_kernel.kernel_id, hermes_kernel.pid))
    r = hermes_kernel.execute("import os\\nprint(os.environ['HK_ALLOWED_TOKEN'])")
    assert r.stdout == "[REDACTED]\\n"
    assert False, "deliberate failure"
"""


def test_exec_redacts_a_host_secret_the_kernel_was_allowed(pytester, run, kept_env, monkeypatch):  # noqa: F811
    """A host secret passed through ``env_allow`` was redacted in the failed test (a host secret),
    but the record kept only the kernel's own ``env``'s: ``exec`` from a shell without that
    variable (another terminal, a CI artifact's post-mortem) printed it whole."""
    pytester.makepyfile(test_keep=ALLOWED)
    monkeypatch.setenv("HK_ALLOWED_TOKEN", SECRET)
    result = run("--hermes-keep-failed")
    result.assert_outcomes(failed=1)
    kid, _ = kept_kernel(pytester)
    monkeypatch.delenv("HK_ALLOWED_TOKEN")  # the post-mortem's shell has no such variable

    printed = hermes("exec", kid, "import os\nprint(os.environ['HK_ALLOWED_TOKEN'])")

    assert (printed.returncode, printed.stdout) == (0, "[REDACTED]\n"), printed.stdout + printed.stderr
