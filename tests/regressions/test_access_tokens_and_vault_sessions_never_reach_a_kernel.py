"""A personal access token or a password manager's session key in the host's env reached a kernel that inherits it.

``GITHUB_PAT`` (R's remotes and usethis read it), ``AZURE_DEVOPS_EXT_PAT`` (the az devops CLI's),
the Bitwarden CLI's ``BW_SESSION`` and the 1Password CLI's ``OP_SESSION_<account>`` (each unlocks
the whole vault) hold no word of the secret-name list: a cell's ``os.environ`` had them (``inherit_env=True``), and a
tool that handed one back printed it whole (no secret value to redact). They look secret now;
``PATH``, ``PATTERN_DIR``, ``DESKTOP_SESSION`` and ``XDG_SESSION_ID`` still pass.
"""

from __future__ import annotations

import ast

from pytest_hermes_kernel.kernel.output import REDACTED, is_secret_name, scrub_env

TOKENS = {"GITHUB_PAT": "ghp_pat-canary-51", "AZURE_DEVOPS_EXT_PAT": "ado-pat-canary-52",
          "BW_SESSION": "bw-session-canary-53", "OP_SESSION_my": "op-session-canary-54"}
PLAIN = {"PATH": "/usr/bin:/bin", "PATTERN_DIR": "/srv/patterns", "DESKTOP_SESSION": "gnome",
         "XDG_SESSION_ID": "c2"}


def test_they_look_secret_and_their_neighbours_do_not() -> None:
    assert [name for name in TOKENS if not is_secret_name(name)] == []
    assert [name for name in PLAIN if is_secret_name(name)] == []
    assert set(scrub_env({**TOKENS, **PLAIN}, keep_all=True)) == set(PLAIN)


def test_they_never_reach_a_kernel_and_a_tools_copy_is_redacted(hermes_kernel_factory, monkeypatch) -> None:
    for name, value in TOKENS.items():
        monkeypatch.setenv(name, value)
    k = hermes_kernel_factory(inherit_env=True, tools={"peek": lambda: TOKENS["BW_SESSION"]})  # after the host has them

    seen = k.execute("import os\nprint({n: os.environ.get(n) for n in %r})" % sorted(TOKENS))
    copied = k.execute("import hermes_tools\nprint(hermes_tools.peek())")

    assert seen.status == "ok", seen.summary()
    assert ast.literal_eval(seen.stdout) == dict.fromkeys(TOKENS), seen.stdout
    assert copied.stdout == f"{REDACTED}\n", copied.stdout
