"""A failing tool's message carried the host's secrets into the kernel.

A tool runs on the host, where the secrets are (the kernel's environment never gets them), and a
tool that failed had its message sent to the cell as the ``ToolError``'s text unredacted: an HTTP
client's error naming the URL it called with the host's API key (``?key=...``), say. The cell
held the key: ``str(err)[::-1]`` printed it (reversed, so no redaction of the output caught it),
and code in the kernel could have sent it anywhere. The message is redacted as the cell's output
is (the host's and the kernel's secret values, credential shapes) before it is sent.
"""

from __future__ import annotations

import os

from pytest_hermes_kernel.kernel.output import REDACTED

HOST_SECRET = "host-tool-canary-" + "9d3a51e0"
CELL = """import hermes_tools
try:
    hermes_tools.call_api()
except hermes_tools.ToolError as err:
    seen = str(err)
print(seen[::-1])
seen"""


def test_a_failing_tools_message_holds_no_host_secret_in_the_kernel(hermes_kernel_factory, monkeypatch):
    monkeypatch.setenv("HK_TOOL_API_KEY", HOST_SECRET)

    def call_api() -> None:
        raise RuntimeError(f"GET https://api.example/v1/items?key={os.environ['HK_TOOL_API_KEY']} failed: 401")

    r = hermes_kernel_factory(tools={"call_api": call_api}).execute(CELL)

    assert r.status == "ok", r.summary()
    assert HOST_SECRET[::-1] not in r.stdout, "the cell got the host's secret in the tool's message"
    assert r.value == repr(f"RuntimeError: GET https://api.example/v1/items?key={REDACTED} failed: 401"), r.value
