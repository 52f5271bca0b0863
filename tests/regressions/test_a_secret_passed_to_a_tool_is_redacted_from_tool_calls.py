"""A secret of the kernel's env that a cell passed to a tool was shown whole in ``tool_calls``.

Each call's ``args`` preview (the arguments' repr, cut at 80 characters) was the one text of a
``CellResult`` left unredacted: ``hermes_tools.login(token=os.environ['SERVICE_TOKEN'])`` put
the token in ``result.tool_calls[0]["args"]``, and so in ``repr(result)``, which handed case B43
says never holds it; one that straddled the cut at 80 showed its head. The preview is now
redacted like the result's other text, before it is cut.
"""

from __future__ import annotations

import pytest

CANARY = "s3cr3t-canary-" + "7f3c9e1d2b8a"


@pytest.mark.parametrize("code", [
    "hermes_tools.login(token=os.environ['SERVICE_TOKEN'])",
    "hermes_tools.login(pad='x' * 40, token=os.environ['SERVICE_TOKEN'])",  # the secret straddles the cut
], ids=["whole", "at-the-cut"])
def test_a_secret_passed_to_a_tool_is_redacted_from_its_args_preview(hermes_kernel_factory, code):
    kernel = hermes_kernel_factory(env={"SERVICE_TOKEN": CANARY}, tools={"login": lambda token, pad="": "in"})

    result = kernel.execute("import os, hermes_tools\n" + code)

    assert result.value == "'in'", result.summary()
    [call] = result.tool_calls
    assert "token" in call["args"] and len(call["args"]) <= 80, call
    assert CANARY[:8] not in call["args"] and CANARY[:8] not in repr(result), call
