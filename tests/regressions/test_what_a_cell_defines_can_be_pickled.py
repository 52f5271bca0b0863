"""Functions and classes a cell defined could not be pickled: no ``multiprocessing`` pool for them.

A cell's names live in the kernel's namespace, whose ``__name__`` is ``"__main__"``; but
``sys.modules["__main__"]`` was the runner's own ``__main__`` module, so pickle's lookup of
``__main__.f`` failed: ``PicklingError: Can't pickle <function f ...>: attribute lookup f on
__main__ failed``, for ``pickle.dumps(f)``, an instance of a class of the cell, and every
``multiprocessing`` pool or ``ProcessPoolExecutor`` given such a function (as a script or a
notebook can). The namespace is now the ``__main__`` module's.
"""

from __future__ import annotations

DEFINE = "def double(x):\n    return x * 2\n\nclass Point:\n    def __init__(self, x):\n        self.x = x\n"


def test_a_cells_function_and_class_pickle(hermes_kernel):
    hermes_kernel.execute(DEFINE)

    result = hermes_kernel.execute("import pickle; (pickle.loads(pickle.dumps(double))(21), "
                                   "pickle.loads(pickle.dumps(Point(5))).x)")

    assert (result.status, result.value) == ("ok", "(42, 5)"), result.summary()


def test_a_fork_pool_maps_a_cells_function(hermes_kernel):
    hermes_kernel.execute(DEFINE)

    result = hermes_kernel.execute("import multiprocessing as mp\n"
                                   "with mp.get_context('fork').Pool(2) as pool:\n"
                                   "    doubled = pool.map(double, [1, 2, 3])\n"
                                   "doubled", timeout=30)

    assert (result.status, result.value) == ("ok", "[2, 4, 6]"), result.summary()
    after = hermes_kernel.execute("__name__, double(1)")
    assert after.value == "('__main__', 2)" and not after.kernel.state_lost


def test_a_string_annotation_resolves_to_a_cells_class(hermes_kernel):
    """``typing.get_type_hints`` (dataclasses, pydantic) looks names up in the class's module,
    ``sys.modules["__main__"]``: a forward reference to a cell's class raised ``NameError``."""
    hermes_kernel.execute("import dataclasses, typing\nclass Inner:\n    pass\n")

    result = hermes_kernel.execute("@dataclasses.dataclass\nclass Outer:\n    inner: 'Inner'\n"
                                   "typing.get_type_hints(Outer)['inner'] is Inner")

    assert (result.status, result.value) == ("ok", "True"), result.summary()
