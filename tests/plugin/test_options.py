"""Command-line options, their env and ini equivalents, the report header, and precedence
marker > CLI > env > ini > default, seen through a cell that sleeps 3 s under each budget."""

from __future__ import annotations

import re
import subprocess
import uuid

import pytest

from pytest_hermes_kernel.containers.images import KERNEL_HOST_TAG
from pytest_hermes_kernel.plugin.settings import SETTINGS
from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS, output_of

MATRIX_CONFTEST = """
from pytest_hermes_kernel.transports import register_transport
from pytest_hermes_kernel.transports.local import LocalTransport

register_transport("mirror", LocalTransport)  # a second transport name, as a backend would add one
"""

MATRIX_TESTS = """
import pytest

def test_x(hermes_transport, hermes_kernel):
    assert hermes_kernel.execute("6 * 7").value == "42"

@pytest.mark.hermes_transports("mirror")
def test_only_mirror(hermes_kernel):
    pass

def test_no_kernel():
    pass
"""

SLEEPY_CELL = """
import pytest

def test_cell(hermes_kernel):
    r = hermes_kernel.execute("import time; time.sleep(0.5)")
    print(f"\\nCELL status={r.status} budget={hermes_kernel.options.timeout}")
"""

SLEEPY_CELL_MARKED = SLEEPY_CELL + """
@pytest.mark.hermes_kernel(timeout=5)
def test_marked_cell(hermes_kernel):
    r = hermes_kernel.execute("import time; time.sleep(0.5)")
    print(f"\\nCELL status={r.status} budget={hermes_kernel.options.timeout}")
"""


def test_transport_matrix_gives_one_test_id_per_transport(pytester, run):
    pytester.makeconftest(MATRIX_CONFTEST)
    pytester.makepyfile(test_matrix=MATRIX_TESTS)

    result = run("-v", "--hermes-transport=local,mirror")

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([
        "hermes-kernel: transports=local,mirror *",
        "*test_matrix.py::test_x[[]local[]] PASSED*",
        "*test_matrix.py::test_x[[]mirror[]] PASSED*",
        "*test_matrix.py::test_only_mirror[[]mirror[]] PASSED*",
        "*test_matrix.py::test_no_kernel PASSED*",
    ])
    assert "test_only_mirror[local]" not in result.stdout.str()


def test_transport_from_env_and_ini(pytester, run, monkeypatch):
    pytester.makeconftest(MATRIX_CONFTEST)
    pytester.makepyfile(test_matrix=MATRIX_TESTS)
    pytester.makeini("[pytest]\nhermes_transport = local\n")
    monkeypatch.setenv("PYTEST_HERMES_TRANSPORT", "mirror")

    result = run("-v", "-k", "test_x")

    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(["hermes-kernel: transports=mirror *", "*test_x[[]mirror[]] PASSED*"])


def test_an_ini_list_written_one_entry_per_line_is_the_matrix(pytester, run):
    """The ini's usual way to write a list: one entry per line. It was read as one name,
    'local\nmirror', and refused as an unknown transport."""
    pytester.makeconftest(MATRIX_CONFTEST)
    pytester.makepyfile(test_matrix=MATRIX_TESTS)
    pytester.makeini("[pytest]\nhermes_transport =\n    local\n    mirror,\n")

    result = run("-v", "-k", "test_x")

    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(["hermes-kernel: transports=local,mirror *", "*test_x[[]local[]] PASSED*",
                                 "*test_x[[]mirror[]] PASSED*"])


@pytest.mark.parametrize(("name", "error"), [
    ("bogus", "unknown transport 'bogus' (from --hermes-transport*known: local, docker, ssh, filecell*register_transport*"),
    ("dockr", "unknown transport 'dockr'; did you mean 'docker'? (from --hermes-transport); known: local, docker, ssh, filecell*"),
])
def test_unknown_transport_is_a_usage_error_that_suggests_a_near_name(pytester, run, name, error):
    pytester.makepyfile(test_matrix=MATRIX_TESTS)

    result = run(f"--hermes-transport=local,{name}")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: {error}"])


def test_an_unknown_transport_is_a_usage_error_when_no_test_takes_a_kernel_fixture(pytester, run, monkeypatch):
    """Only a test of a kernel fixture looked at the names: a suite of its own KernelRegistry (the
    README's "One kernel for several tests") ran ``--hermes-transport=dockr`` green, header and all."""
    pytester.makepyfile("def test_nothing(): pass")
    monkeypatch.setenv("PYTEST_HERMES_TRANSPORT", "dockr")

    result = run()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-hermes-kernel: unknown transport 'dockr'; did you mean 'docker'? "
                                 "(from PYTEST_HERMES_TRANSPORT)*"])
    spread = run("-n", "1")  # on an xdist worker: each test errors with the message (one test: one worker)
    spread.assert_outcomes(errors=1)
    spread.stdout.fnmatch_lines(["*unknown transport 'dockr'; did you mean 'docker'?*"])


@pytest.mark.parametrize("line", ["hermes_transport =", "hermes_timeout ="])
def test_an_empty_ini_setting_is_a_usage_error_not_the_default(pytester, run, line):
    """An ini written from a template whose variable was unset ran the local leg (and a 60 s budget)
    as if nothing had been set: the false green the CLI and env checks already refuse."""
    pytester.makepyfile(test_matrix=MATRIX_TESTS)
    pytester.makeini(f"[pytest]\n{line}\n")

    result = run()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    name = line.split()[0]
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: ini {name} is set but empty: give it a value, or "
                                 "remove the line for the default"])


def test_a_transport_list_in_pyproject_toml_is_the_matrix(pytester, run):
    """A TOML list was read as its Python text: "unknown transport \"['local'\"", with a hint to
    register a backend."""
    pytester.makeconftest(MATRIX_CONFTEST)
    pytester.makepyfile(test_matrix=MATRIX_TESTS)
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\nhermes_transport = ["local", "mirror"]\n')

    result = run("-v", "-W", "error", "-k", "test_x")

    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(["hermes-kernel: transports=local,mirror *"])


def test_an_empty_environment_setting_is_a_usage_error_not_the_default(pytester, run, monkeypatch):
    pytester.makepyfile(test_matrix=MATRIX_TESTS)
    monkeypatch.setenv("PYTEST_HERMES_TRANSPORT", "")

    result = run()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-hermes-kernel: PYTEST_HERMES_TRANSPORT is set but empty (an unset CI "
                                 "variable?): give it a value, or unset it for the default"])


@pytest.mark.parametrize("flag", ["--hermes-transport=", "--hermes-leak-check="])
def test_an_empty_option_value_is_a_usage_error_not_the_default(pytester, run, flag):
    """``--hermes-transport=$LEG`` with ``LEG`` unset in a CI matrix ran the local leg as if no
    transport had been named: the docker leg's job was green without docker."""
    pytester.makepyfile(test_matrix=MATRIX_TESTS)

    result = run(flag)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: {flag[:-1]} was given an empty value (an unset "
                                 f"variable in the command line?): give a value, or leave {flag[:-1]} out*"])


@pytest.mark.parametrize("how", ["cli", "env", "-o"])
def test_a_blank_duration_is_a_usage_error_not_no_limit(pytester, run, monkeypatch, how):
    """``--hermes-timeout=" "`` (or ``PYTEST_HERMES_TIMEOUT=" "``, ``-o "hermes_timeout= "``: a
    variable that expanded to a space) ran every cell with no limit at all, green: a blank value was
    read as ``none`` where an empty one is a usage error."""
    pytester.makepyfile(test_cell=SLEEPY_CELL)
    args = {"cli": ["--hermes-timeout= "], "env": [], "-o": ["-o", "hermes_timeout= "]}[how]
    if how == "env":
        monkeypatch.setenv("PYTEST_HERMES_TIMEOUT", " ")

    result = run("-s", *args)

    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    said = {"cli": "--hermes-timeout was given an empty value", "env": "PYTEST_HERMES_TIMEOUT is set but empty",
            "-o": "ini hermes_timeout is set but empty"}[how]
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: {said}*"])


@pytest.mark.parametrize("how", ["cli", "env", "ini"])
def test_bad_leak_check_value_is_a_usage_error_naming_its_source(pytester, run, monkeypatch, how):
    pytester.makepyfile("def test_nothing(): pass")
    args = []
    if how == "cli":
        args.append("--hermes-leak-check=loud")
    elif how == "env":
        monkeypatch.setenv("PYTEST_HERMES_LEAK_CHECK", "loud")
    else:
        pytester.makeini("[pytest]\nhermes_leak_check = loud\n")

    result = run(*args)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    source = {"cli": "--hermes-leak-check", "env": "PYTEST_HERMES_LEAK_CHECK", "ini": "ini hermes_leak_check"}[how]
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: bad value 'loud' from {source}: "
                                 "--hermes-leak-check must be off, warn or error, not 'loud'"])


@pytest.mark.parametrize("image", ["MyKernels:1", "kernels:1 ", "kernels::1"])
def test_an_image_name_docker_refuses_is_a_usage_error(pytester, run, image):
    """``--hermes-image=MyKernels:1`` errored every docker test at setup with docker's traceback
    (``docker.errors.APIError: 400 ... invalid reference format: repository name must be lowercase``)."""
    pytester.makepyfile("def test_nothing(): pass")

    result = run("--hermes-transport=docker", f"--hermes-image={image}")

    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: bad value '{image}' from --hermes-image: "
                                 f"'{image}' is not a docker image name*"])


@pytest.mark.parametrize("kind", ["encrypted", "public half"])
def test_an_ssh_key_file_that_cannot_log_in_is_a_usage_error(pytester, run, kind):
    """``--hermes-ssh-key`` of an encrypted key (or the ``.pub`` half) errored every ssh test at its
    kernel's start as an unreachable host."""
    pytester.makepyfile("def test_nothing(): pass")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret-words", "-f", "id"], check=True, cwd=pytester.path)
    key = pytester.path / ("id" if kind == "encrypted" else "id.pub")

    result = run("--hermes-transport=local", f"--hermes-ssh-key={key}")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    says = "is encrypted" if kind == "encrypted" else "is no private key"
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: bad value '{key}' from --hermes-ssh-key: *{says}*"])


def test_a_known_hosts_file_that_is_none_is_a_usage_error(pytester, run):
    """``--hermes-ssh-known-hosts`` of a file that is no known_hosts file errored every ssh test at
    its kernel's start (the key file was checked before the run, this one was not)."""
    pytester.makepyfile("def test_nothing(): pass")
    hosts = pytester.path / "known_hosts"
    hosts.write_text("127.0.0.1 ssh-ed25519 not-base64!\n")

    result = run("--hermes-transport=local", f"--hermes-ssh-known-hosts={hosts}")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: bad value '{hosts}' from --hermes-ssh-known-hosts: "
                                 "*is no known_hosts file*"])


def test_bad_timeout_value_is_a_usage_error(pytester, run):
    pytester.makepyfile("def test_nothing(): pass")
    result = run("--hermes-timeout=soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-hermes-kernel: bad value 'soon' from --hermes-timeout: *"])


NUMERIC_SETTINGS = [s for s in SETTINGS if s.default is not None and not s.is_flag
                    and type(s.parse(s.default)) in (int, float)]
"""Every setting that takes a number (seconds or a count), found from the settings table itself."""


def test_the_numeric_settings_are_found() -> None:
    assert {s.name for s in NUMERIC_SETTINGS} >= {"timeout", "keep_failed_ttl", "max_kernels", "idle_timeout",
                                                  "leak_grace", "reuse_idle_timeout"}


@pytest.mark.parametrize("setting", NUMERIC_SETTINGS, ids=lambda s: s.name)
@pytest.mark.parametrize("how", ["cli", "ini"])
def test_a_number_setting_given_a_word_says_which_setting_and_what_it_expects(pytester, run, setting, how):
    """``--hermes-reuse-idle-timeout=abc`` said ``could not convert string to float: 'abc'``, and an
    ini key of ``four`` ``invalid literal for int() with base 10``: Python's words, no setting named."""
    pytester.makepyfile("def test_nothing(): pass")
    if how == "ini":
        pytester.makeini(f"[pytest]\nhermes_{setting.name} = four\n")
    source, word = (setting.flag, "abc") if how == "cli" else (f"ini hermes_{setting.name}", "four")

    result = run(*([f"{setting.flag}={word}"] if how == "cli" else []))

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "could not convert" not in err and "invalid literal" not in err, err
    expected = "an integer" if isinstance(setting.parse(setting.default), int) else "seconds"
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: bad value '{word}' from {source}: "
                                 f"*{expected}*, not '{word}'"])


@pytest.mark.parametrize(("option", "value"), [("--hermes-leak-grace", "nan"), ("--hermes-leak-grace", "inf"),
                                               ("--hermes-timeout", "nan"), ("--hermes-timeout", "inf"),
                                               ("--hermes-idle-timeout", "1e400"), ("--hermes-timeout", "1e10")])
def test_a_duration_that_is_no_finite_number_is_a_usage_error(pytester, run, option, value):
    """``--hermes-leak-grace=nan`` re-checked a leak forever (the run hung), and a cell timeout
    of ``nan`` or ``inf`` errored every test at its kernel's start, blaming a
    "hermes_kernel_factory option" the test never gave."""
    pytester.makepyfile("import subprocess\n\ndef test_leaks():\n    subprocess.Popen(['sleep', '5'])\n")

    result = run(f"{option}={value}")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: bad value '{value}' from {option}: a duration "
                                 "must be a finite number of seconds >= 0 (at most 1e+09) or none*"])


@pytest.mark.parametrize("zero", ["0", "0.0", "-0"])
def test_any_spelling_of_a_zero_timeout_is_no_limit(pytester, run, zero):
    """``--hermes-timeout=0`` was no limit but ``0.0`` errored every test at its kernel's start."""
    pytester.makepyfile(test_cell=SLEEPY_CELL)

    result = run("-s", f"--hermes-timeout={zero}")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["CELL status=ok budget=None"])


def test_keep_failed_is_a_bare_flag_that_does_not_swallow_the_test_path(pytester, run):
    pytester.makepyfile(test_one="def test_one(): pass", test_two="def test_two(): pass")

    result = run("--hermes-keep-failed", "test_one.py")

    result.assert_outcomes(passed=1)  # test_two.py was not collected: the path was kept as a path
    result.stdout.fnmatch_lines(["hermes-kernel: transports=local * keep-failed"])


def test_a_switch_on_in_the_environment_is_turned_off_for_one_run_by_its_no_flag(pytester, run, monkeypatch):
    pytester.makepyfile("def test_nothing(): pass")
    monkeypatch.setenv("PYTEST_HERMES_KEEP_FAILED", "1")
    monkeypatch.setenv("PYTEST_HERMES_REQUIRE_TRANSPORTS", "true")

    result = run("--no-hermes-keep-failed", "--no-hermes-require-transports")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["hermes-kernel: transports=local cell-timeout=60 s leak-check=warn max-kernels=4"])
    assert "keep-failed" not in result.stdout.str() and "require-transports" not in result.stdout.str()


def test_keep_failed_from_env_rejects_a_non_boolean(pytester, run, monkeypatch):
    pytester.makepyfile("def test_nothing(): pass")
    monkeypatch.setenv("PYTEST_HERMES_KEEP_FAILED", "sure")
    result = run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*bad value 'sure' from PYTEST_HERMES_KEEP_FAILED: expected one of 1, true*"])


def test_header_shows_the_defaults(pytester, run):
    pytester.makepyfile("def test_nothing(): pass")
    result = run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["hermes-kernel: transports=local cell-timeout=60 s leak-check=warn max-kernels=4"])
    assert "hermes-kernel summary" not in result.stdout.str()  # no kernel, no summary


# ------------------------------------------------------- a shared transport made before the run
# A conftest.py that makes the shared transport at import makes it before the run's --hermes-*
# options apply; the hermes_transport fixture then asks for it with those options. Other options
# error each test that needs it, saying so (they were silently ignored: the run used the conftest's
# transport); the same options, or none, run as ever.

EARLY_CONFTEST = """
from pytest_hermes_kernel.transports import get_transport

EARLY = get_transport({name!r}{options})  # at import: before the run's options apply
"""

EARLY_TESTS = """
def test_cell(hermes_kernel):
    assert hermes_kernel.execute("6 * 7").value == "42"

def test_the_conftest_s_transport(hermes_transport):
    import conftest
    assert hermes_transport is conftest.EARLY
"""


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_other_options_than_a_conftest_s_shared_transport_error_each_test_saying_so(pytester, run, docker_ready, name):
    image = f"hermes-no-such-image:{uuid.uuid4().hex[:8]}"
    pytester.makeconftest(EARLY_CONFTEST.format(name=name, options=""))
    pytester.makepyfile(test_early=EARLY_TESTS)

    result = run(f"--hermes-transport={name}", f"--hermes-image={image}")

    result.assert_outcomes(errors=2)  # in the hermes_transport fixture's setup
    out = output_of(result)
    said = f"get_transport('{name}', image='{image}'): the shared {name} transport of this process was already made, by "
    # each test's error section says it (the short summary repeats it, whole under CI=true, cut to the terminal's width else)
    assert len(re.findall(rf"^test_early\.py::\S+: {re.escape(said)}", out, re.M)) == 2, out
    assert f"conftest.py:3 (<module>) with no options, and these differ: image='{image}' here, None (the " \
           "default) there." in out, out
    assert f"make_transport('{name}', ...) for a transport of your own" in out, out


@pytest.mark.parametrize(("options", "args"), [
    pytest.param("", [], id="no-options"),
    pytest.param(f", image={KERNEL_HOST_TAG!r}", [f"--hermes-image={KERNEL_HOST_TAG}"], id="the-run-s-image"),
    pytest.param(f", image={KERNEL_HOST_TAG!r}, container='shared', server=True", [f"--hermes-image={KERNEL_HOST_TAG}"],
                 id="defaults-spelled-out"),
])
def test_a_conftest_s_shared_transport_with_the_run_s_options_is_the_run_s(pytester, run, docker_ready, options, args):
    pytester.makeconftest(EARLY_CONFTEST.format(name="docker", options=options))
    pytester.makepyfile(test_early=EARLY_TESTS)

    result = run("--hermes-transport=docker", *args)

    result.assert_outcomes(passed=2)


# ----------------------------------------------------------------------------- precedence
# Each case sets the cell budget at several levels; the highest level decides whether a cell
# that sleeps 0.5 s times out (budget 0.2 s) or finishes (budget 5 s or the 60 s default).

@pytest.mark.parametrize(("levels", "header", "status"), [
    pytest.param({"ini": "0.2"}, "cell-timeout=0.2 s", "timeout", id="ini-over-default"),
    pytest.param({"ini": "5", "env": "0.2"}, "cell-timeout=0.2 s", "timeout", id="env-over-ini"),
    pytest.param({"env": "5", "cli": "0.2"}, "cell-timeout=0.2 s", "timeout", id="cli-over-env"),
])
def test_timeout_precedence_cli_env_ini(pytester, run, monkeypatch, levels, header, status):
    pytester.makepyfile(test_cell=SLEEPY_CELL)
    if "ini" in levels:
        pytester.makeini(f"[pytest]\nhermes_timeout = {levels['ini']}\n")
    if "env" in levels:
        monkeypatch.setenv("PYTEST_HERMES_TIMEOUT", levels["env"])
    args = [f"--hermes-timeout={levels['cli']}"] if "cli" in levels else []

    result = run("-s", *args)

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"hermes-kernel: transports=local {header} *", f"CELL status={status} budget=0.2"])


def test_timeout_default_then_marker_over_cli(pytester, run):
    pytester.makepyfile(test_budget=SLEEPY_CELL_MARKED)

    default = run("-s", "-k", "not marked")
    marked = run("-s", "--hermes-timeout=0.2", "-k", "marked")

    default.assert_outcomes(passed=1, deselected=1)
    marked.assert_outcomes(passed=1, deselected=1)
    default.stdout.fnmatch_lines(["*cell-timeout=60 s*", "CELL status=ok budget=60.0"])
    marked.stdout.fnmatch_lines(["*cell-timeout=0.2 s*", "CELL status=ok budget=5"])
    assert "status=timeout" not in output_of(default) + output_of(marked)


# ------------------------------------------------- the run id of a shared transport made early
EARLY_RUN_TESTS = """
def test_the_conftest_s_transport_is_in_the_run():
    import conftest
    from pytest_hermes_kernel.containers.sharing import current_run_id
    assert conftest.EARLY.run_id == current_run_id()
"""


def test_a_conftest_s_shared_transport_joins_the_run_when_no_run_id_is_named(pytester):
    """No run id named: the run adopts the one the transport was made with (it starts no container:
    the run's own-run-id guard of the ``run`` fixture is not needed, nor possible)."""
    pytester.makeconftest(EARLY_CONFTEST.format(name="docker", options=""))
    pytester.makepyfile(test_early=EARLY_RUN_TESTS)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--hermes-transport=docker",
                                           timeout=RUN_TIMEOUT_S)

    result.assert_outcomes(passed=1)
    assert "was made before pytest set this run's id" not in output_of(result)


def test_a_conftest_s_shared_transport_outside_a_named_run_id_is_warned_of(pytester, run):
    """``--hermes-run-id`` names the run after the conftest made the transport under its own id:
    the run's id does not reach its containers. Said in a warning (it passed in silence)."""
    run_id = f"test-early-{uuid.uuid4().hex[:8]}"
    pytester.makeconftest(EARLY_CONFTEST.format(name="docker", options=""))
    pytester.makepyfile(test_early=EARLY_RUN_TESTS.replace("==", "!="))

    result = run("--hermes-transport=docker", f"--hermes-run-id={run_id}")

    result.assert_outcomes(passed=1, warnings=1)
    out = output_of(result)
    assert "PytestConfigWarning: the shared docker transport was made before pytest set this run's id, by " in out, out
    assert f"conftest.py:3 (<module>): it runs under run id " in out and f"not the run's {run_id}" in out, out
    assert "call get_transport() in a fixture or test, not at conftest.py import" in out, out
