"""A backend's ``register_transport`` in ``tests/backend/conftest.py``, and a run of another
directory (``pytest --hermes-transport=mine tests/other``): pytest never read that conftest, and
the usage error's hint said only "registers its own name ... in a conftest.py", which the author
had done. It now says which conftest files a run reads, and that a ``-p`` module serves as well
(which this checks too: a module loaded with ``-p`` registers the name for every directory)."""

from __future__ import annotations

REGISTERS = """
from pytest_hermes_kernel.transports import register_transport
from pytest_hermes_kernel.transports.local import LocalTransport


class Mine(LocalTransport):
    name = "mine"


register_transport("mine", Mine)
"""

TEST = "def test_x(hermes_kernel):\n    assert hermes_kernel.execute('1 + 1').value == '2'\n"


def test_a_run_that_does_not_read_the_registering_conftest_says_which_conftests_it_reads(pytester, run) -> None:
    pytester.mkpydir("tests")
    pytester.mkdir("tests/backend").joinpath("conftest.py").write_text(REGISTERS)
    pytester.mkdir("tests/other").joinpath("test_x.py").write_text(TEST)

    result = run("-q", "--hermes-transport=mine", "tests/other")

    assert result.ret == 4, result.stdout.str()[-3000:]
    result.stderr.fnmatch_lines(["*unknown transport 'mine' (from --hermes-transport)*Hint: a backend registers its "
                                 "name with register_transport() in a conftest.py this run reads (the rootdir's, or "
                                 "one at or above a test path given) or a -p module."])


def test_a_module_loaded_with_dash_p_registers_the_name(pytester, run) -> None:
    pytester.makepyfile(mine_backend=REGISTERS, test_x=TEST)

    result = run("-q", "-p", "mine_backend", "--hermes-transport=mine")

    result.assert_outcomes(passed=1)
    assert "test_x.py::test_x[mine] PASSED" in run("-v", "-p", "mine_backend", "--hermes-transport=mine").stdout.str()
