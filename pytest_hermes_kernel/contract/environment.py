"""Contract: a kernel's environment reaches the kernel exactly, and never changes how it starts.

``KernelOptions.env`` is applied to the kernel only, after everything that decides how the
kernel runner starts is fixed: whatever names a user passes (the shell variables of a launch
script, ``PATH``, ``LD_PRELOAD``, ``PYTHONHOME``, names with ``;`` or ``$(`` in them), the
kernel starts the same way and its cells, and their subprocesses, see exactly those values.
Only names the OS cannot hold (empty, with ``=`` or NUL) and values with NUL are refused, with
a :class:`~pytest_hermes_kernel.errors.ConfigError` that names the variable.
"""

from __future__ import annotations

import json
import random

import pytest

from ..errors import ConfigError

#: Names the launch paths of the built-in transports use or that steer how a program starts:
#: the filecell launch script's own variables (``R``, ``D``, ``PY``), the interpreter's and the
#: dynamic loader's start-up variables, and what a POSIX shell reads at start or per command.
LAUNCH_NAMES = ("D", "R", "PY", "PATH", "HOME", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME",
                "PYTHONSTARTUP", "PYTHONSAFEPATH", "PYTHONNOUSERSITE", "PYTHONINSPECT", "PYTHONWARNINGS",
                "PYTHONEXECUTABLE", "IFS", "ENV", "BASH_ENV", "SHELL", "CDPATH", "PS4", "SHELLOPTS", "TMPDIR",
                "PWD", "OLDPWD", "USER", "LOGNAME", "_", "LANG", "LC_ALL")
#: Characters of fuzzed names and values: shell syntax, quotes, blanks and non-ASCII text.
_FUZZ_CHARS = "abcXYZ019_-.;$()`'\" \\|&<>*?#~!{}[]%^@,:+/\téü✓日本🙂"
#: Names tried in every fuzzed set, besides the random ones.
FUZZ_FIXED = ("A;B", "$(id)", "`id`", "a b", "'q'", '"dq"', "ünï", "1digit", "-dash", "x$HOME", "$", "日本")
#: A cell that prints, as JSON, the values of ``WANT``'s names in its own os.environ and in a child
#: interpreter's (``-I``: it ignores PYTHON* variables; ``-X utf8``: whatever ``LANG`` says).
_PROBE = """
import json, os, subprocess, sys
want = {want!r}
child = subprocess.run([sys.executable, "-I", "-X", "utf8", "-c",
                        "import json, os, sys; sys.stdout.write(json.dumps(dict(os.environ)))"],
                       capture_output=True, check=True).stdout
seen = json.loads(child)
print(json.dumps({{"kernel": {{k: os.environ.get(k) for k in want}},
                  "child": {{k: seen.get(k) for k in want}}}}))
"""


def fuzzed_env(seed: int, count: int = 40) -> dict[str, str]:
    """``count`` random names (and :data:`FUZZ_FIXED`) with random values, reproducible by ``seed``.

    Names hold any of :data:`_FUZZ_CHARS` (never ``=`` or NUL); values may also hold ``=``,
    newlines or nothing at all.
    """
    rng = random.Random(seed)
    env = {name: f"fixed {name} = {i}" for i, name in enumerate(FUZZ_FIXED)}
    while len(env) < count + len(FUZZ_FIXED):
        name = "".join(rng.choice(_FUZZ_CHARS) for _ in range(rng.randint(1, 12)))
        value = "".join(rng.choice(_FUZZ_CHARS + "=\n") for _ in range(rng.randint(0, 24)))
        env.setdefault(name, value)
    return env


def _seen(kernel, env: dict[str, str]) -> dict[str, dict[str, str | None]]:
    r = kernel.execute(_PROBE.format(want=sorted(env)))
    assert r.status == "ok", r.summary()
    return json.loads(r.stdout)


def _assert_exact(seen: dict[str, dict[str, str | None]], env: dict[str, str]) -> None:
    for where in ("kernel", "child"):
        wrong = {k: (v, seen[where][k]) for k, v in env.items() if seen[where][k] != v}
        assert not wrong, f"{where}: variable -> (given, seen): {wrong!r}"


def test_env_names_launch_scripts_use_reach_the_kernel_unchanged(kernel_factory):
    env = {name: "plain-value" if name in ("D", "R", "PY", "PATH") else f"{name} $(exit 3); `false` 'q' \"d\"\n;"
           for name in LAUNCH_NAMES}
    k = kernel_factory(env=env)

    _assert_exact(_seen(k, env), env)
    assert k.execute("6 * 7").value == "42"


@pytest.mark.parametrize("seed", [1, 2])
def test_env_fuzzed_names_and_values_reach_the_kernel_unchanged(kernel_factory, seed):
    env = fuzzed_env(seed)
    k = kernel_factory(env=env)

    _assert_exact(_seen(k, env), env)


def test_env_survives_a_restart(kernel_factory):
    env = {"PY": "plain-value", "A;B": "$(x)"}
    k = kernel_factory(env=env)
    k.restart()

    _assert_exact(_seen(k, env), env)


@pytest.mark.parametrize("env, name", [
    ({"": "v"}, ""), ({"A=B": "v"}, "A=B"), ({"A\0B": "v"}, "A\0B"), ({"GOOD": "a\0b"}, "GOOD"),
], ids=["empty-name", "equals-in-name", "nul-in-name", "nul-in-value"])
def test_env_the_os_cannot_hold_is_a_config_error_naming_it(kernel_factory, env, name):
    with pytest.raises(ConfigError) as caught:
        kernel_factory(env=env)
    assert repr(name) in str(caught.value)


def test_host_variables_reach_the_kernel_only_as_scrubbed(kernel_factory, monkeypatch):
    """A kernel starts with the scrubbed environment of its ``LaunchSpec.env``, never the host's:
    a host variable whose name looks secret never reaches it, nor, with ``inherit_env=False``, one
    off the safe list. A transport that hands the kernel ``os.environ`` (merged under ``spec.env``)
    gives every cell the host's secrets (cells' output only redacts their values)."""
    secret, plain = "HERMES_CONTRACT_API_TOKEN", "HERMES_CONTRACT_HOST_ONLY"
    monkeypatch.setenv(secret, "host-secret-value")
    monkeypatch.setenv(plain, "host-only-value")

    for options, kept_out in (({}, (secret,)), ({"inherit_env": False}, (secret, plain))):
        seen = _seen(kernel_factory(**options), dict.fromkeys(kept_out, ""))
        for where in ("kernel", "child"):
            leaked = sorted(name for name in kept_out if seen[where][name] is not None)
            assert not leaked, (f"{where} (options {options}): the host's {leaked} reached the kernel: a kernel's "
                                "environment is LaunchSpec.env (scrubbed of the host's secrets, and of names off the "
                                "safe list with inherit_env=False), never the host's os.environ")
