"""Bad input found by the breaker session of 2026-12-03 gets a clear error before anything starts:
a key that is no ``KernelKey`` (a bare ``AttributeError`` deep in the registry), a ``KernelKey``
whose owner is not a non-empty str (``owner=None`` gave a bare ``TypeError`` at the first
delegated-child check), a ``timeout`` of ``True`` (it ran as a 1-s budget) or a string (a bare
``TypeError`` from ``math.isfinite``), and a ``cwd`` that is a file (its hint said "does not exist").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelKey, KernelRegistry, start_kernel
from pytest_hermes_kernel.errors import ConfigError, KernelStartError
from pytest_hermes_kernel.kernel.options import KernelOptions


@pytest.mark.parametrize("key", ["conv-1", ("conv-1",), None])
def test_a_key_that_is_no_kernel_key_is_a_type_error_that_shows_the_right_form(key):
    with KernelRegistry() as registry, pytest.raises(TypeError, match=r"must be a KernelKey, e\.g\. KernelKey\(owner="):
        registry.execute(key, "1")  # type: ignore[arg-type]


@pytest.mark.parametrize("fields", [{"owner": None}, {"owner": ""}, {"owner": 7}, {"owner": "a", "transport": 3},
                                    {"owner": "a", "cwd": Path("/tmp")}])
def test_a_kernel_key_with_a_field_of_the_wrong_kind_is_a_config_error_naming_it(fields):
    bad = next(name for name in ("transport", "cwd", "owner") if name in fields)
    with pytest.raises(ConfigError, match=f"KernelKey {bad} must be"):
        KernelKey(**fields)


@pytest.mark.parametrize("value", [True, False, "5", float("nan")])
def test_a_timeout_that_is_no_number_of_seconds_is_refused(value):
    with pytest.raises(ConfigError, match="timeout must be a finite number of seconds"):
        KernelOptions(timeout=value)
    with pytest.raises(ConfigError, match="start_timeout must be a finite number of seconds"):
        KernelOptions(start_timeout=value if value is not False else True)


@pytest.mark.parametrize("value", [True, "5"])
def test_a_cells_timeout_that_is_no_number_of_seconds_is_refused_and_the_kernel_keeps_its_state(value):
    with start_kernel("local") as k:
        k.execute("x = 1")
        with pytest.raises(ConfigError, match="timeout must be a finite number of seconds"):
            k.execute("x += 1", timeout=value)
        assert k.execute("x").value == "1"


@pytest.mark.parametrize("what, says", [("file", "is not a directory"), ("nothing", "does not exist")])
def test_a_cwd_that_is_no_directory_says_which(tmp_path, what, says):
    cwd = tmp_path / "notes.txt"
    if what == "file":
        cwd.write_text("not a directory")
    with pytest.raises(KernelStartError, match=f"Hint: the working directory cwd={str(cwd)!r} {says}"):
        start_kernel("local", cwd=str(cwd))


def test_a_keys_tools_given_as_a_list_is_a_tuple_and_the_key_works():
    # KernelKey(tools=[...]) was taken and the key's first cell raised a bare "TypeError:
    # unhashable type: 'list'" from the registry's map (a docstring check, 2026-12-06)
    key = KernelKey(owner="a", tools=["lookup"])
    assert key.tools == ("lookup",) and key == KernelKey(owner="a", tools=("lookup",))
    assert hash(key) == hash(KernelKey(owner="a", tools=("lookup",)))


@pytest.mark.parametrize("tools", ["lookup", [1], None])
def test_a_keys_tools_that_are_no_list_of_names_are_refused(tools):
    # "lookup" was taken as the tools ('l', 'o', 'o', 'k', 'u', 'p')
    with pytest.raises(ConfigError, match="KernelKey tools must be a list or tuple of tool names"):
        KernelKey(owner="a", tools=tools)
