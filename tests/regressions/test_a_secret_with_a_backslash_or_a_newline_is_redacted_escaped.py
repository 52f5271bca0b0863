"""A secret holding a backslash or a newline showed, escaped, wherever a repr or JSON wrote it.

Secret values are redacted as literals, but a cell's value is a ``repr``: the kernel env's
``HK_DB_PASSWORD='Zq\\9#kP2\\vLx7'`` (a generated password with backslashes) came back as the value
``'Zq\\\\9#kP2\\\\vLx7'``, in a dict's repr, in ``json.dumps`` output and in a tool call's ``args``,
each holding the password with its backslashes doubled (a multi-line token: its ``\\n`` written out),
none redacted; only ``print`` of the bare value was. Each secret's repr and JSON forms are secret
values too now.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.kernel.output import REDACTED, secret_values

PASSWORD = "Zq\\9#kP2\\vLx7-canary"
MULTILINE = "line-one-canary\nline-two-canary"
ENV = {"HK_DB_PASSWORD": PASSWORD, "HK_ML_TOKEN": MULTILINE}


def test_the_escaped_forms_are_secret_values():
    assert set(secret_values(ENV)) == {PASSWORD, "Zq\\\\9#kP2\\\\vLx7-canary", MULTILINE, "line-one-canary\\nline-two-canary"}


@pytest.mark.parametrize("code, field, shown", [
    ("os.environ['HK_DB_PASSWORD']", "value", f"'{REDACTED}'"),
    ("{'pw': os.environ['HK_DB_PASSWORD']}", "value", f"{{'pw': '{REDACTED}'}}"),
    ("print(json.dumps({'pw': os.environ['HK_DB_PASSWORD']}))", "stdout", f'{{"pw": "{REDACTED}"}}\n'),
    ("os.environ['HK_ML_TOKEN']", "value", f"'{REDACTED}'"),
    ("hermes_tools.f(pw=os.environ['HK_DB_PASSWORD'])", "args", f"{{'pw': '{REDACTED}'}}"),
], ids=["value", "dict", "json", "multi-line", "tool-args"])
def test_an_escaped_secret_is_redacted(hermes_kernel_factory, code, field, shown):
    k = hermes_kernel_factory(env=ENV, tools={"f": lambda **kw: 1})

    r = k.execute(f"import os, json, hermes_tools\n{code}")

    assert r.status == "ok", r.summary()
    got = r.tool_calls[0]["args"] if field == "args" else getattr(r, field)
    assert got == shown, got
