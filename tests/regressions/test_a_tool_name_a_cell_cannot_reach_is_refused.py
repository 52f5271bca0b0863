"""A tool registered under a name the cell cannot call it by was taken, and a name that is no
str raised a bare ``AttributeError``.

``hermes_tools`` has attributes of its own: a tool named ``call``, ``available`` or ``ToolError``
was registered, listed by ``available()``, and ``hermes_tools.available()`` in a cell returned
the list instead of calling it (``hermes_tools.call(x=1)`` raised "missing 1 required positional
argument: 'name'"). A keyword (``class``) is an identifier that no attribute access can spell,
and a name that NFKC normalisation changes (``ﬁnd``, with the ligature) is reached by
``hermes_tools.ﬁnd`` as ``find``: unknown. ``{1: f}`` raised ``AttributeError: 'int' object has
no attribute 'isidentifier'``. Each is now a ``ConfigError`` naming the tool, before anything
starts.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.errors import ConfigError
from pytest_hermes_kernel.kernel.rpc import ToolTable


@pytest.mark.parametrize(("name", "says"), [
    ("call", "hermes_tools' own"), ("available", "hermes_tools' own"), ("ToolError", "hermes_tools' own"),
    ("class", "a Python keyword"), ("None", "a Python keyword"),
    ("\ufb01nd", "'find'"),
    (1, "must be a str"), (None, "must be a str"), (b"add", "must be a str"),
])
def test_a_tool_name_a_cell_cannot_reach_is_a_config_error(name, says):
    with pytest.raises(ConfigError, match=r"tool name .*" + says.replace("(", r"\(")):
        ToolTable({name: len})
    with pytest.raises(ConfigError):
        KernelHandle(transport=None, tools={name: len})  # type: ignore[arg-type]


def test_non_ascii_identifiers_that_stay_as_they_are_are_taken():
    assert ToolTable({"café": len, "größe_2": len}).names() == ["café", "größe_2"]
