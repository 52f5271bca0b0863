"""A scenario file with a table, key or value the catalog does not have is a collection error
naming the file, the table and the key (docs/catalog.md). Each of these ran before: a
``[[faults]]`` typo ran the scenario without its fault and it passed, a typo in
``[expect_end]`` or ``[registry]`` was never checked, a ``transports`` given as a string or
with an unknown name ran the scenario nowhere without a word, and a ``[kernel]`` value out of
range or a cell's code that is no string gave a message without the file or a traceback."""

from __future__ import annotations

import pytest

from tests.support import output_of

HEAD = '[scenario]\nname = "s"\nsource = "test"\n'
CELL = '\n[[cell]]\ncode = "x = 1"\n'

BAD = {
    "faults_typo": (HEAD + '\n[[faults]]\nkind = "kernel_sigkill"\nafter_cell = 1\n' + CELL + CELL,
                    "faults_typo.toml: unknown table [faults]; a scenario has [scenario], [kernel], [fault], [cell]"),
    "end_typo": (HEAD + CELL + "\n[expect_end]\nkernel = 5\n",
                 "end_typo.toml: [expect_end]: unknown keys ['kernel']; known: ['kernels', 'processes']"),
    "registry_typo": (HEAD + "\n[registry]\nmax_kernel = 1\n" + CELL,
                      "registry_typo.toml: [registry]: unknown keys ['max_kernel']; known: ['idle_timeout', 'max_kernels']"),
    "description_list": (HEAD + 'description = ["floods", "caps"]\n' + CELL,
                         "description_list.toml: [scenario]: description must be a string, not ['floods', 'caps']"),
    "transports_text": (HEAD + 'transports = "docker"\n' + CELL,
                        "transports_text.toml: [scenario]: transports must be a non-empty list of transport names"),
    "transports_typo": (HEAD + 'transports = ["lcoal"]\n' + CELL,
                        "transports_typo.toml: [scenario]: transports: unknown transport 'lcoal'; known: local,"),
    "kernel_range": (HEAD + "\n[kernel]\ntimeout = -1\n" + CELL,
                     "kernel_range.toml: [kernel]: timeout must be a finite number of seconds > 0 (at most 1e+09) or None, got -1"),
    "code_number": (HEAD + "\n[[cell]]\ncode = 1\n", "code_number.toml: cell 1: code must be a string"),
    "expect_text": (HEAD + '\n[[cell]]\ncode = "1"\nexpect = "ok"\n', "expect_text.toml: cell 1: code must be a string "
                    "and expect a table"),
    # a CI-user helper: each of these ran, and passed or failed only at run time
    "same_pid_text": (HEAD + '\n[[cell]]\ncode = "1"\nexpect = { same_pid = "no" }\n',
                      "same_pid_text.toml: cell 1: expect same_pid = 'no': only true is checked"),
    "value_number": (HEAD + '\n[[cell]]\ncode = "2"\nexpect = { value = 2 }\n',
                     "value_number.toml: cell 1: expect value = 2: must be a string (value is the repr"),
    "status_typo": (HEAD + '\n[[cell]]\ncode = "2"\nexpect = { status = "okay" }\n',
                    "status_typo.toml: cell 1: expect status = 'okay': must be one of ['died', 'error', 'exited', "
                    "'interrupted', 'ok', 'timeout']"),
    "exit_code_text": (HEAD + '\n[[cell]]\ncode = "2"\nexpect = { exit_code = "3" }\n',
                       "exit_code_text.toml: cell 1: expect exit_code = '3': must be an integer"),
    # checks that could not fail: every step is shorter than inf, every text contains ""
    "duration_inf": (HEAD + '\n[[cell]]\ncode = "2"\nexpect = { max_duration_s = inf }\n',
                     "duration_inf.toml: cell 1: expect max_duration_s = inf: must be a finite number of seconds > 0"),
    "contains_empty": (HEAD + '\n[[cell]]\ncode = "2"\nexpect = { stdout_contains = "" }\n',
                       "contains_empty.toml: cell 1: expect stdout_contains = '': every text contains ''"),
}


def each_is_a_collection_error(pytester, run, cases: dict[str, tuple[str, str]]) -> str:
    """Write each case's scenario file under ``fixtures/``, run them, check each is a collection
    error with its expected message; the run's output."""
    pytester.mkdir("fixtures")
    for name, (text, _) in cases.items():
        pytester.path.joinpath("fixtures", f"{name}.toml").write_text(text)

    result = run("fixtures", "--hermes-transport=local")

    result.assert_outcomes(errors=len(cases))
    text = output_of(result)
    missing = {name: expected for name, (_, expected) in cases.items() if expected not in text}
    assert not missing, f"not reported: {missing}\n{text}"
    return text


def test_each_bad_scenario_file_is_a_collection_error_naming_file_table_and_key(pytester, run):
    each_is_a_collection_error(pytester, run, BAD)


@pytest.mark.parametrize("extra", ['description = "why"\ntransports = ["local"]\n', ""])
def test_a_scenario_with_every_table_it_may_have_still_runs(pytester, run, extra):
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "ok.toml").write_text(
        HEAD + extra + '\n[kernel]\ntimeout = 10\n\n[registry]\nmax_kernels = 2\nidle_timeout = 60\n\n[[fault]]\n'
        'kind = "kernel_sigkill"\nafter_cell = 1\n' + CELL + '\n[[cell]]\ncode = "x"\nexpect = { ename = "NameError" }\n'
        "\n[expect_end]\nkernels = 1\n")

    run("fixtures", "--hermes-transport=local").assert_outcomes(passed=1)


def test_a_scenario_file_that_is_not_utf8_is_a_collection_error_naming_file_and_line(pytester, run):
    """TOML is UTF-8: a file saved in Latin-1 was a UnicodeDecodeError traceback from pathlib."""
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "latin1.toml").write_bytes(
        (HEAD + '\n[[cell]]\ncode = "print(\'café\')"\n').encode("latin-1"))

    result = run("fixtures", "--hermes-transport=local")

    result.assert_outcomes(errors=1)
    text = output_of(result)
    assert "latin1.toml: not a readable TOML scenario: line 6 is not UTF-8 (byte 0xe9)" in text, text
    assert "Traceback" not in text and "pathlib" not in text and "codecs" not in text, text


IGNORED = {
    # each of these passed: the runner never read the key, so its check or code did nothing
    "restart_expect": (HEAD + CELL + '\n[[cell]]\naction = "restart"\nexpect = { status = "error" }\n',
                       'restart_expect.toml: cell 2: action = "restart" does not take expect (the step never reads '
                       "it: only a cell step runs code and checks expect); it takes child, owner"),
    "reap_code": (HEAD + CELL + '\n[[cell]]\naction = "reap"\ncode = "assert False"\n',
                  'reap_code.toml: cell 2: action = "reap" does not take code'),
    "shutdown_owner_child": (HEAD + CELL + '\n[[cell]]\naction = "shutdown_owner"\nchild = "c1"\n',
                             'shutdown_owner_child.toml: cell 2: action = "shutdown_owner" does not take child'),
    "same_pid_one_thread": (HEAD + '\n[[cell]]\ncode = "1"\nexpect = { same_pid = true }\n',
                            "same_pid_one_thread.toml: cell 1: expect same_pid = true: needs threads >= 2 (one "
                            "cell always runs on one kernel)"),
}


def test_a_key_that_an_action_step_never_reads_is_a_collection_error(pytester, run):
    each_is_a_collection_error(pytester, run, IGNORED)


WRONG_VALUES = {
    # each of these ran: a traceback from the runner (threads = 0: ValueError from ThreadPoolExecutor,
    # a shutdown_child without child: KeyError), a message without the file or the cell, or a
    # failure that made no sense ("expected 1 registry entries, got 1")
    "cell_timeout_text": (HEAD + '\n[[cell]]\ncode = "1"\ntimeout = "3"\n',
                          "cell_timeout_text.toml: cell 1: timeout must be a finite number of seconds > 0, not '3'"),
    "threads_zero": (HEAD + '\n[[cell]]\ncode = "1"\nthreads = 0\n',
                     "threads_zero.toml: cell 1: threads must be an integer >= 1, not 0"),
    "interrupt_text": (HEAD + '\n[[cell]]\ncode = "1"\ninterrupt_after = "x"\n',
                       "interrupt_text.toml: cell 1: interrupt_after must be a finite number of seconds > 0, not 'x'"),
    "owner_list": (HEAD + '\n[[cell]]\ncode = "1"\nowner = ["a"]\n',
                   "owner_list.toml: cell 1: owner must be a non-empty string, not ['a']"),
    "shutdown_no_child": (HEAD + CELL + '\n[[cell]]\naction = "shutdown_child"\n',
                          'shutdown_no_child.toml: cell 2: action = "shutdown_child" needs child'),
    "max_kernels_text": (HEAD + '\n[registry]\nmax_kernels = "2"\n' + CELL,
                         "max_kernels_text.toml: [registry]: max_kernels must be an integer >= 1, not '2'"),
    "idle_negative": (HEAD + "\n[registry]\nidle_timeout = -5\n" + CELL,
                      "idle_negative.toml: [registry]: idle_timeout must be a finite number of seconds >= 0, not -5"),
    "end_text": (HEAD + CELL + '\n[expect_end]\nkernels = "1"\n',
                 "end_text.toml: [expect_end]: kernels must be an integer >= 0, not '1'"),
    "end_bool": (HEAD + CELL + "\n[expect_end]\nprocesses = true\n",
                 "end_bool.toml: [expect_end]: processes must be an integer >= 0, not True"),
    "kernel_number": ("kernel = 3\n" + HEAD + CELL, "kernel_number.toml: kernel must be a [kernel] table, not 3"),
    "registry_number": ("registry = 3\n" + HEAD + CELL,
                        "registry_number.toml: registry must be a [registry] table, not 3"),
}


def test_a_value_of_the_wrong_type_or_range_is_a_collection_error_naming_the_key(pytester, run):
    text = each_is_a_collection_error(pytester, run, WRONG_VALUES)
    assert "Traceback" not in text and "KeyError" not in text and "max_workers" not in text, text


def test_a_scenario_header_written_another_valid_way_is_still_checked(pytester, run):
    """TOML allows ``[ scenario ]`` and a comment after a header. A bad scenario under such a
    header was dropped without a word (its error was read as "some other TOML file"), and one
    named on the command line outside ``fixtures/`` got pytest's bare ``not found``."""
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "spaced.toml").write_text('[ scenario ]\nname = 1\n' + CELL)
    pytester.mkdir("other")
    pytester.path.joinpath("other", "mine.toml").write_text(HEAD.replace("[scenario]", "[scenario]  # B99") + CELL)

    spaced, named = run("fixtures", "--hermes-transport=local"), run("other/mine.toml", "--hermes-transport=local")

    spaced.assert_outcomes(errors=1)
    assert "spaced.toml: [scenario]: name must be a non-empty string, not 1" in output_of(spaced), output_of(spaced)
    assert "mine.toml is not collected as a scenario" in output_of(named), output_of(named)


def test_a_scenario_name_that_no_node_id_can_select_is_a_collection_error(pytester, run):
    """The name is the item's node id: ``a::b`` ran, and ``pytest 'fixtures/f.toml::a::b[local]'``
    (the id pytest printed, what ``--lf`` reruns) answered ``not found``; a newline split the id
    over two lines of every report."""
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "colons.toml").write_text('[scenario]\nname = "a::b"\n' + CELL)
    pytester.path.joinpath("fixtures", "newline.toml").write_text('[scenario]\nname = "two\\nlines"\n' + CELL)

    result = run("fixtures", "--hermes-transport=local")

    result.assert_outcomes(errors=2)
    text = output_of(result)
    assert ("colons.toml: [scenario]: name 'a::b' cannot be part of a node id (no '::', no control characters): "
            "pytest could not select the test by the id it prints") in text, text
    assert "newline.toml: [scenario]: name 'two\\nlines' cannot be part of a node id" in text, text
