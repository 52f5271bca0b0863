"""The text of a failed ``filecell`` launch: what happened in plain words, then its output.

A launch is one execute whose output carries the protocol's own lines (``HERMES-FILECELL-PYTHON
<path>``, ``HERMES-FILECELL-ERROR <step>: ...``, ``@@hermes-client ...@@``); a failed start
showed them raw, with ``client None`` (no client ever ran) in its first line. Here they become
one sentence of what went wrong, and the rest of the output (the interpreter's own words, the
runner log's tail) follows without them. Imports only the filecell scripts (no transport).
"""

from __future__ import annotations

import re

from ...kernel.runner import client as runner_client
from . import scripts

#: ``HERMES-FILECELL-ERROR <step>: <detail>``: the launch's own line saying which step failed.
_STEP = re.compile(rf"^{re.escape(scripts.ERROR_MARK)} ([a-z]+)(?::)? ?(.*)$", re.M)


def plain_output(out: str, limit: int = 2000) -> str:
    """``out`` without the protocol's marker lines (the last ``limit`` characters), or ``""``."""
    marks = (scripts.ERROR_MARK, scripts.PYTHON_MARK, runner_client.CLIENT_BEGIN, runner_client.CLIENT_SENT,
             runner_client.CLIENT_END)
    kept = [line for line in out.splitlines() if not line.strip().startswith(marks)]
    return "\n".join(kept).strip()[-limit:]


def what_happened(code: object, out: str, pid: int | None, status: str | None, python: str) -> str:
    """One sentence: which step of the launch failed, from its output and the hello's ``status``.

    :param code: the launch's exit status; :param pid: the runner's (``ready <pid>``), if it said it.
    :param status: how the hello's client ended (``None``: no client ran, or its end was lost).
    """
    step = _STEP.search(out)
    kind, detail = (step.group(1), step.group(2).strip()) if step else ("", "")
    if kind == "python":
        return f"the interpreter {python!r} was not found on the backend (exit status {code})"
    if kind == "root":
        return f"the kernel root {detail} (exit status {code})"
    if kind == "dir":
        return f"the kernel dir could not be made ({detail.removeprefix('cannot make ').strip()}; exit status {code})"
    if kind == "setup":
        return (f"the launch's setup failed (exit status {code}) before the kernel runner started (its interpreter: "
                f"{python!r}, or what an earlier launch found it runs)")
    if kind == "runner":
        return (f"the kernel runner ({python!r}) ended before it said it was ready "
                f"({detail.replace('exit', 'exit status')})")
    if pid is None:
        return f"the launch ended (exit status {code}) without the kernel runner saying it was ready"
    if status is None:
        return f"the kernel runner started (pid {pid}) but the client that asks for its hello printed no answer"
    if status in ("gone", "eof"):
        return f"the kernel runner started (pid {pid}) and ended before it said hello"
    return f"the kernel runner started (pid {pid}) but its hello ended with {status!r} (exit status {code})"


def start_failed(code: object, out: str, pid: int | None, status: str | None, python: str, root: str) -> str:
    """The whole message: what happened, the output without markers, and the hint."""
    said = plain_output(out)
    return (f"the filecell kernel runner did not start: {what_happened(code, out, pid, status, python)}"
            + (f":\n{said}" if said else "") + f"\nHint: {scripts.start_hint(out, python, root)}")
