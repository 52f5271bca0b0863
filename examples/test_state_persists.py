"""A kernel is a persistent namespace: what one cell defines, the next cell sees.

``hermes_kernel`` is the plugin's fixture: a kernel started on this test's transport
(``--hermes-transport``, ``local`` by default) and shut down after the test.
"""


def test_names_defined_in_one_cell_are_seen_by_the_next(hermes_kernel):
    hermes_kernel.execute("import math\nradius = 2")
    hermes_kernel.execute("def area(r):\n    return math.pi * r ** 2")

    result = hermes_kernel.execute("round(area(radius), 3)")

    assert result.status == "ok"
    assert result.value == "12.566"  # ``value`` is the repr of the last expression, as a REPL shows it


def test_output_is_captured_per_cell(hermes_kernel):
    result = hermes_kernel.execute("print('hello')\nimport sys; print('oops', file=sys.stderr)")

    assert result.stdout == "hello\n" and result.stderr == "oops\n"
    assert result.value is None  # the last statement is not an expression


def test_an_error_is_a_result_and_the_state_survives_it(hermes_kernel):
    hermes_kernel.execute("total = 10")

    failed = hermes_kernel.execute("total / 0")
    after = hermes_kernel.execute("total + 1")

    assert failed.status == "error" and failed.ename == "ZeroDivisionError"
    assert "ZeroDivisionError" in failed.traceback
    assert after.value == "11"


def test_every_result_says_which_kernel_ran_it(hermes_kernel):
    first = hermes_kernel.execute("1")
    second = hermes_kernel.execute("2")

    # same process, same generation: nothing was restarted between the cells
    assert first.kernel.pid == second.kernel.pid == hermes_kernel.pid
    assert second.kernel.generation == 0 and not second.kernel.state_lost
    assert second.kernel.reused  # it had run a cell before
    assert second.execution_count == first.execution_count + 1
