"""A cell that raises an exception whose class cannot say its name kept its kernel's state lost.

The worker described the error with ``type(exc).__name__`` outside any guard: a metaclass whose
``__name__`` raises (user code, like an exception's ``__str__``) made the description itself
raise after the cell, the worker exited with code 70 and the cell said ``died``, the namespace
gone. The error is now named by the name the interpreter keeps for the class (``Weird``), and
the kernel keeps its state.
"""

from __future__ import annotations

WEIRD = """\
class Meta(type):
    @property
    def __name__(cls):
        raise RuntimeError("no name")
class Weird(Exception, metaclass=Meta):
    pass
raise Weird("the message")
"""


def test_an_exception_whose_class_name_raises_is_an_error_and_the_state_stays(hermes_kernel):
    hermes_kernel.execute("kept = 41")

    result = hermes_kernel.execute(WEIRD)

    assert result.status == "error" and not result.kernel.state_lost, result.summary()
    assert result.ename == "Weird" and result.evalue == "the message", result.summary()
    assert hermes_kernel.execute("kept + 1").value == "42"
