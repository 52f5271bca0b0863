"""docs/*.md as a user reads a page and then tries it: what a page quotes the package saying is
what it says (each produced here, then found on the page), and a page's example runs as written."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from tests.docs.readme import run_command
from tests.support import REPO_ROOT

DOCS = REPO_ROOT / "docs"


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def said_on(name: str, message: str, value: str) -> bool:
    """Whether page ``name`` quotes ``message`` with ``value`` written ``...`` (in a code span)."""
    return any(span.replace("...", value) in message for span in re.findall(r"`([^`]+)`", page(name)) if "..." in span)


@pytest.mark.parametrize("cwd, hint", [("/nonexistent/dir", "does not exist."), ("/etc/hostname", "is not a directory.")])
def test_reference_quotes_a_local_kernels_cwd_that_cannot_be_entered(cwd: str, hint: str) -> None:
    """It said every transport's start error ends ``cannot enter the working directory cwd=...``:
    local's names the directory in its hint."""
    with pytest.raises(KernelStartError) as exc:
        start_kernel("local", cwd=cwd)
    assert str(exc.value).endswith(f"Hint: the working directory cwd={cwd!r} {hint}"), str(exc.value)
    assert said_on("reference.md", str(exc.value), cwd), "docs/reference.md does not quote: " + str(exc.value)


def python_blocks(name: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page(name), re.S)


@pytest.mark.parametrize("name", ["reference.md"])
def test_a_pages_python_examples_run_as_written_in_a_fresh_directory(name: str, tmp_path: Path) -> None:
    blocks = python_blocks(name)
    assert blocks, f"docs/{name} has no python example"
    for n, block in enumerate(blocks):
        (tmp_path / f"example{n}.py").write_text(block, encoding="utf-8")
        for module in re.findall(r"^from (\w+) import .*# the transport above, as \1\.py$", block, re.M):
            (tmp_path / f"{module}.py").write_text(blocks[n - 1], encoding="utf-8")  # as the block says to save it
        for _ in range(2):  # a second run too: the files example says it may be run again
            ran = run_command(f"python example{n}.py", tmp_path)
            assert ran.returncode == 0, f"docs/{name} python block {n + 1}:\n{ran.stdout[-3000:]}"


def test_api_says_a_queued_cells_budget_does_not_count_while_it_waits_its_turn() -> None:
    """It said a cell waiting its turn behind another thread's cell waits "bounded by its budget":
    a ``timeout=1`` cell behind a 3-s cell waited 2.7 s and ended ``ok``."""
    import threading

    from pytest_hermes_kernel.kernel.queue import CANCEL_LOOK_S

    with start_kernel("local") as kernel:
        ahead = threading.Thread(target=kernel.execute, args=("import time; time.sleep(2)",))
        ahead.start()
        deadline = time.monotonic() + 10
        while kernel.state.value != "busy" and time.monotonic() < deadline:  # the cell ahead runs
            time.sleep(CANCEL_LOOK_S)
        started = time.monotonic()
        result = kernel.execute("1", timeout=0.5)
        ahead.join()
    assert result.status == "ok" and time.monotonic() - started > 0.5, result.summary()
    assert "its own budget does not count while it waits" in page("api.md")
