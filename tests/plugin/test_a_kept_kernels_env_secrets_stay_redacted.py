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
import pathlib
import pytest

@pytest.mark.hermes_kernel(env_allow=["HK_DB_PASS", "HK_DB_URL"])
def test_fails(hermes_kernel):
    pathlib.Path("kernel.json").write_text('{"id": "%s", "pid": %d}' % (hermes_kernel.kernel_id, hermes_kernel.pid))
    r = hermes_kernel.execute("import os\\nprint(os.environ['HK_DB_PASS'], os.environ['HK_DB_URL'])")
    assert r.stdout == "[REDACTED] postgres://app:[REDACTED]@db/app\\n", r.stdout
    assert False, "deliberate failure"
"""


def test_exec_redacts_the_host_secrets_env_allow_passed_to_a_kept_kernel(pytester, run, kept_env,  # noqa: F811
                                                                         monkeypatch):
    """A host secret the test let through (``env_allow=["DB_PASS"]``) was ``[REDACTED]`` in the test,
    as every host secret is, but ``hermes-kernel exec`` from a shell without it printed
    ``hostpw-allowed-4242`` whole: the record kept only the kernel's own ``env`` secrets."""
    pytester.makepyfile(test_keep=ALLOWED)
    monkeypatch.setenv("HK_DB_PASS", SECRET)
    monkeypatch.setenv("HK_DB_URL", f"postgres://app:{SECRET}-url@db/app")

    result = run("--hermes-keep-failed")
    monkeypatch.delenv("HK_DB_PASS")
    monkeypatch.delenv("HK_DB_URL")

    result.assert_outcomes(failed=1)
    kid, _ = kept_kernel(pytester)
    value = hermes("exec", kid, "import os; os.environ['HK_DB_PASS'], os.environ['HK_DB_URL']")
    assert value.stdout == "('[REDACTED]', 'postgres://app:[REDACTED]@db/app')\n", value.stdout + value.stderr
    assert SECRET not in result.stdout.str()
