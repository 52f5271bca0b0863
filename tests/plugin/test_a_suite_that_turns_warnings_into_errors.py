"""A user's suite run with warnings made errors (``-W error::ResourceWarning``, ``-W
error::pytest.PytestUnraisableExceptionWarning``, ``python -X dev``) sees no warning of the kit's
own making: no unclosed socket or file, no running subprocess collected, no traceback at the end.

Each case runs the user's pytest in a subprocess under the strict setting and asserts its exit
status and that nothing of the kind was printed, anywhere in its output.
"""

from __future__ import annotations

import re
import shutil
import tempfile

import pytest

from tests.plugin.test_keep_failed import FAILING_TEST, LEAK_GRACE, hermes, kept_env, kept_kernel  # noqa: F401 (a fixture)
from tests.support import all_gone, kill_quietly, output_of, wait_until

STRICT = ("-W", "error::ResourceWarning", "-W", "error::pytest.PytestUnraisableExceptionWarning")
NOISE = ("ResourceWarning", "PytestUnraisableExceptionWarning", "Exception ignored", "Traceback")

SESSION_KERNEL_NEVER_SHUT_DOWN = """
import pytest
from pytest_hermes_kernel import start_kernel

@pytest.fixture(scope="session")
def shared():
    yield start_kernel("local")  # never shut down: the leak check warns of it and ends it

def test_a(shared):
    shared.execute("a = 1")

def test_b(shared):
    assert shared.execute("a").value == "1"
"""


def test_a_local_kernel_the_leak_check_ended_leaves_no_unclosed_socket_to_turn_the_run_red(pytester, run):
    """Its handle's channel socket stayed open after the leak check ended the kernel: collected at
    pytest's end, ``ResourceWarning: unclosed <socket.socket ...>`` became a 40-line traceback from
    pytest's unconfigure and exit status 1 under ``-W error::...``, below ``2 passed, 1 warning``."""
    pytester.makepyfile(test_session=SESSION_KERNEL_NEVER_SHUT_DOWN)

    result = run(*STRICT, "-q")

    text = output_of(result)
    assert result.ret == 0, text
    result.assert_outcomes(passed=2, warnings=1)  # the HermesLeakWarning: the user's own leak
    assert "HermesLeakWarning" in text
    assert not [word for word in NOISE if word in text], text


SPAWNED_KERNELS_DROPPED = """
import pytest
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

@pytest.mark.hermes_allow_leaks("dropped unclosed on purpose: its lease ends it")
def test_a():
    start_kernel(make_transport("local", server=False)).execute("1")

@pytest.fixture(scope="session")
def shared():
    yield start_kernel(make_transport("local", server=False))  # never shut down: the leak check ends it

def test_b(shared):
    shared.execute("b = 1")

def test_c(shared):
    assert shared.execute("b").value == "1"
"""


def test_a_spawned_local_kernel_dropped_unclosed_leaves_no_running_subprocess_warning(pytester, run):
    """On the spawn path (``server=False``) the runner is this process's child: its ``Popen``,
    collected with the dropped handle while the runner still ran (its lease had just closed), warned
    ``subprocess N is still running``: the test that dropped it failed (``1 failed, 1 passed, 1
    warning, 1 error``); a session fixture's, at pytest's unconfigure, was a traceback and exit status 1."""
    pytester.makepyfile(test_spawned=SPAWNED_KERNELS_DROPPED)

    result = run(*STRICT, "-q")

    text = output_of(result)
    assert result.ret == 0, text
    result.assert_outcomes(passed=3, warnings=1)  # the session kernel's HermesLeakWarning
    assert not [word for word in NOISE if word in text], text


DOCKER_KERNELS_DROPPED = """
import pytest
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

@pytest.mark.hermes_allow_leaks("dropped unclosed on purpose: its orphan timer ends it")
def test_a():
    transport = make_transport("docker", server=False)
    start_kernel(transport).execute("1")
    transport.close()

@pytest.fixture(scope="session")
def shared():
    yield start_kernel("docker")  # never shut down: the leak check ends it

def test_b(shared):
    shared.execute("b = 1")

def test_c(shared):
    assert shared.execute("b").value == "1"
"""


@pytest.mark.usefixtures("docker_ready")
def test_docker_kernels_dropped_unclosed_leave_no_unclosed_exec_socket(pytester, run):
    """A docker kernel's exec stream (docker-py's socket and the HTTP response it keeps on it),
    dropped with a handle nobody shut down, was left to pytest's final garbage collection:
    ``ResourceWarning: unclosed <socket.socket ... raddr=/var/run/docker.sock>`` and
    ``Exception ignored in: <urllib3.response.HTTPResponse ...>`` as an ``ExceptionGroup``
    traceback, exit status 1 below ``3 passed, 1 warning``."""
    pytester.makepyfile(test_dropped=DOCKER_KERNELS_DROPPED)

    result = run(*STRICT, "-q")

    text = output_of(result)
    assert result.ret == 0, text
    result.assert_outcomes(passed=3, warnings=1)  # the session kernel's HermesLeakWarning
    assert not [word for word in NOISE if word in text], text


FILECELL_KERNEL_LEFT_ON_PURPOSE = """
import os
import pytest
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

KEPT = []

@pytest.mark.hermes_allow_leaks("the conversation's kernel outlives the test (the exit hook ends it)")
def test_a():
    kernel = start_kernel(make_transport("filecell", root=os.environ["FILECELL_ROOT"]))
    print("PIDS", kernel.execute("import os; os.getppid(), os.getpid()").value)
    KEPT.append(kernel)
"""


def test_a_filecell_kernel_left_running_at_the_runs_end_leaves_no_running_subprocess_warning(pytester, run, monkeypatch):
    """The subreaper that reaps a filecell kernel's runner lives as long as the kernel; its
    ``Popen`` collected at interpreter exit printed ``ResourceWarning: subprocess N is still
    running`` (under ``-X dev``: ``Exception ignored in: <function Popen.__del__ ...>`` and a
    traceback) after the run's last line, while the kernel lived on past the run (its orphan
    timer). Since 2026-12-06 the exit hook's close of the transport ends such a kernel (README: a
    script that exits normally leaves no kernel): it is gone after the run, and still no warning."""
    pytester.makepyfile(test_left=FILECELL_KERNEL_LEFT_ON_PURPOSE)
    root = tempfile.mkdtemp(prefix="hfc-")  # short: the kernel's socket lives below it
    monkeypatch.setenv("FILECELL_ROOT", root)
    monkeypatch.setenv("PYTHONWARNINGS", "error::ResourceWarning")  # the interpreter's exit too, not only pytest's
    pids: list[int] = []
    try:
        result = run(*STRICT, "-q", "-s")
        text = output_of(result)
        found = re.search(r"PIDS \((\d+), (\d+)\)", text)
        pids = [int(found[1]), int(found[2])] if found else []
        assert result.ret == 0, text
        result.assert_outcomes(passed=1)
        assert pids, text
        wait_until(lambda: all_gone(pids), 10.0, what="the kernel left running to be ended at the run's exit")
        assert not [word for word in NOISE if word in text], text
    finally:
        kill_quietly(pids)
        wait_until(lambda: all_gone(pids), 10.0, what="the left kernel's runner and worker to end")
        shutil.rmtree(root, ignore_errors=True)


def test_the_cli_on_a_kept_kernel_whose_worker_died_leaves_no_unclosed_socket(pytester, run, kept_env, monkeypatch):
    """``hermes-kernel exec`` on a kept kernel whose worker had ended said so and left its connection
    to the kept runner open: under ``python -X dev`` (or ``PYTHONWARNINGS=error::ResourceWarning``) its
    stderr ended ``sys:1: ResourceWarning: unclosed <socket.socket ... raddr=.../kept.sock>``."""
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, _ = kept_kernel(pytester)
    monkeypatch.setenv("PYTHONDEVMODE", "1")  # the CLI's interpreter: its exit shows what was left unclosed
    died = hermes("exec", kid, "import os; os._exit(4)")
    assert died.returncode == 1 and "exited with code 4" in died.stderr, died.stderr

    after = hermes("exec", kid, "evidence")

    assert after.returncode == 1 and after.stdout == "", after.stdout
    assert after.stderr.startswith(f"[kernel {kid}: the kept kernel's worker had ended before this attach"), after.stderr
    assert after.stderr.count("\n") == 1 and "ResourceWarning" not in after.stderr, after.stderr
    assert kid in hermes("ls", "--ids").stdout.split()  # still kept: the command only left it


LEAKY = """
import subprocess

def test_y(hermes_kernel):
    hermes_kernel.execute("import subprocess; subprocess.Popen(['sleep', '300'], start_new_session=True)")
"""


def test_the_readmes_filter_line_keeps_the_leak_warning_a_warning_under_filterwarnings_error(pytester, run):
    """README, Troubleshooting, "Warnings turned into errors": the message it quotes, and its line."""
    from tests.docs.test_readme_text import section

    entry = section("Troubleshooting").split("\n### Warnings turned into errors\n", 1)[1].split("\n### ", 1)[0]
    (quoted,), (config,) = re.findall(r"```text\n(.*?)```", entry, re.S), re.findall(r"```toml\n(.*?)```", entry, re.S)
    pytester.makepyfile(test_x=LEAKY)
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n')

    strict = run("-q", LEAK_GRACE)

    assert strict.ret == 1, output_of(strict)
    strict.stdout.fnmatch_lines([line.replace("[", "[[]").replace("...", "*") for line in quoted.strip().splitlines()])
    pytester.makefile(".toml", pyproject=config)

    kept_a_warning = run("-q", LEAK_GRACE)

    assert kept_a_warning.ret == 0, output_of(kept_a_warning)
    kept_a_warning.assert_outcomes(passed=1, warnings=1)
    kept_a_warning.stdout.fnmatch_lines(["*leaks only warned of: 1 test (test_x.py::test_y[[]local[]])*"])
