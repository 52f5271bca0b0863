"""``hermes-kernel ls --test NODEID`` takes a test's kept kernels (every leg), or a file's or a
class's, never those of a test whose name merely starts the same (the README's snippet picks the
last id it lists, so a sibling ``test_load_many`` would be taken for ``test_load``)."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.containers.kept import KeptKernel


def _kept_by(nodeid: str, test: str, rootdir: str | None = None, cwd: str | None = None) -> bool:
    """Whether ``ls --test TEST`` takes the kernel kept by ``nodeid`` (from ``rootdir``)."""
    record = KeptKernel(kernel_id="k", transport="local", locator={}, token="t", nodeid=nodeid, kept_at=0.0,
                        detached_at=0.0, ttl_s=1.0, host_pid=1, rootdir=rootdir)
    return record.kept_by(test, cwd=cwd)


@pytest.mark.parametrize(("nodeid", "test", "taken"), [
    ("test_x.py::test_load[local]", "test_x.py::test_load", True),
    ("test_x.py::test_load[local]", "test_x.py::test_load[local]", True),
    ("test_x.py::test_load", "test_x.py::test_load", True),
    ("test_x.py::TestA::test_load[ssh]", "test_x.py::TestA", True),
    ("test_x.py::test_load[local]", "test_x.py", True),
    ("test_x.py::test_load_many[local]", "test_x.py::test_load", False),
    ("test_x.py::test_load[local]", "test_x.py::test_load[docker]", False),
    ("test_xy.py::test_load[local]", "test_x", False),
    ("sub/test_x.py::test_load[local]", "test_x.py::test_load", True),  # run from sub/, rootdir above
    ("sub/test_x.py::test_load[local]", "./test_x.py::test_load", True),
    ("sub/test_x.py::test_load[local]", "ub/test_x.py::test_load", False),
    ("a/sub/test_x.py::test_load[local]", "sub/test_x.py", True),
])
def test_a_node_id_or_its_prefix_at_pytests_own_boundaries(nodeid, test, taken):
    assert _kept_by(nodeid, test) is taken


@pytest.mark.parametrize(("test", "taken"), [
    ("proj/tests/test_x.py::test_load", True),  # pytest run from /w: it prints paths from there
    ("proj/tests/test_x.py", True),
    ("/w/proj/tests/test_x.py::test_load", True),  # an absolute path
    ("../w/proj/tests/test_x.py::test_load[local]", True),
    ("other/tests/test_x.py::test_load", False),  # another project's file of the same name
    ("proj/tests/test_x.py::test_load_many", False),
])
def test_a_node_id_as_pytest_printed_it_from_above_the_rootdir(test, taken):
    """Run from a directory above the rootdir, pytest prints ``proj/tests/test_x.py::test_load``
    while the record holds the node id from the rootdir, ``tests/test_x.py::test_load[local]``:
    ``ls --test`` with what pytest printed found nothing (the README's snippet then passed an empty
    id on). The record's rootdir resolves the path as given, from the directory ``ls`` runs in."""
    assert _kept_by("tests/test_x.py::test_load[local]", test, rootdir="/w/proj", cwd="/w") is taken
