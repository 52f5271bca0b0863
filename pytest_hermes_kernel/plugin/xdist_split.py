"""pytest-xdist, on a worker: a test that fails for state a shared kernel lacks says the run split its tests.

A kernel held by a fixture of a wider scope than the test (module, class, package, session) is
shared by the tests that use it, one after the other, in one process. Under ``-n`` with a
distribution that spreads one module's tests over the workers (``load``, ``worksteal``; and
``loadgroup`` for a test no ``xdist_group`` mark keeps with its group), each worker sets the fixture up for
itself: a test that reads what another test set finds its worker's own kernel without it, and
failed with the cell's ``NameError`` and nothing in the report naming xdist. Such a failure's
report gets a section that names the fixture and the fix (``--dist loadfile``).

When it shows: the test failed (any phase) on a worker of a run with more than one worker in one
of those modes, and during the test a cell on a kernel held by such a fixture raised one of
:data:`STATE_ERRORS`: the errors of a name, key or attribute that is not there, what a missing
earlier cell leaves. A failure with no such cell (an assertion on a value, a cell that raised
``ZeroDivisionError``) gets none: the split is no likelier its cause than anywhere else. Never
without xdist, under ``loadfile`` or ``loadscope`` (a module's tests share a worker there), or
with one worker.

The controller passes its ``--dist`` to each worker (``workerinput["hermes_dist"]``: a worker's
own option reads ``no``). On a worker in such a mode the plugin object marks each wider fixture's
setup as the holder of the kernels made in it (:mod:`~pytest_hermes_kernel.kernel.holders`; the
leak checker's mark, when it runs, is taken as it is) and listens to every held kernel from its
first start (:mod:`~pytest_hermes_kernel.kernel.census`): a registry's kernel started lazily by a
later test too. Elsewhere it registers nothing; loading it imports nothing of the kernel core.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

from ..kernel import census  # stdlib only: no kernel module is loaded for it

#: What a cell raises when a name, key or attribute an earlier cell made is not there.
STATE_ERRORS = frozenset({"NameError", "UnboundLocalError", "KeyError", "AttributeError"})
#: The ``--dist`` modes that may run one module's tests on several workers.
SPLITTING = frozenset({"load", "worksteal", "loadgroup"})
#: The report section's title.
TITLE = "hermes-kernel: a shared kernel under pytest-xdist"

_told_key = pytest.StashKey[bool]()


class SplitHint:
    """Plugin object (an xdist worker of a splitting run); see module docstring."""

    def __init__(self, dist: str, worker: str, workers: int) -> None:
        self.dist, self.worker, self.workers = dist, worker, workers
        self.fixtures: dict[Any, tuple[str, str]] = {}  # holder -> (fixture name, scope)
        self._mine: set[Any] = set()  # the holders this object set (not the leak checker's)
        self._errors: list[tuple[Any, str, str, str]] | None = None  # this test's: (holder, kernel id, ename, evalue)
        self._lock = threading.Lock()

    @pytest.hookimpl(wrapper=True, trylast=True)  # innermost: inside the leak checker's mark, if it runs
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Any:
        """A wider fixture's setup holds the kernels made in it: its name and scope are noted."""
        if fixturedef.scope == "function":
            return (yield)
        from ..kernel.holders import current_holder  # stdlib only

        holder, token = current_holder.get(), None
        if holder is None or holder in self._mine:  # no leak check, or an outer fixture's: a mark of its own
            holder = _Holder()
            self._mine.add(holder)
            token = current_holder.set(holder)
        self.fixtures[holder] = (fixturedef.argname, fixturedef.scope)
        try:
            return (yield)
        finally:
            if token is not None:
                current_holder.reset(token)

    def on_census(self, event: str, kernel_id: str) -> None:
        """The census's observer: a kernel that started is listened to if a wider fixture holds it
        (from now on, across restarts: a handle keeps its listeners)."""
        holders = sys.modules.get("pytest_hermes_kernel.kernel.holders")
        if event != "started" or holders is None:
            return
        for handle in holders.held_handles():
            if handle.kernel_id == kernel_id and handle.holder in self.fixtures:
                handle.add_listener(self.on_event)

    def on_event(self, event: str, kernel: Any, payload: Any) -> None:
        """A held kernel's listener (:data:`~pytest_hermes_kernel.kernel.interface.KernelListener`): a
        cell result with one of :data:`STATE_ERRORS` during a test is noted for its report."""
        if event != "result" or getattr(payload, "ename", None) not in STATE_ERRORS:
            return
        with self._lock:
            if self._errors is not None:
                self._errors.append((kernel.holder, kernel.kernel_id, payload.ename, payload.evalue or ""))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Each run of a test notes its own cells, those of the wider fixtures set up for it included."""
        with self._lock:
            self._errors = []  # (a rerun of the item starts afresh)
        item.stash[_told_key] = False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """The test's first failed report gets the hint if it noted a missing-state error."""
        report = yield
        with self._lock:
            errors = list(self._errors or ())
        if report.failed and errors and not item.stash.get(_told_key, True) and self._spread(item):
            item.stash[_told_key] = True  # once: in the test's first failed phase
            _add_section(report, self.hint(errors))
        return report

    def _spread(self, item: pytest.Item) -> bool:
        """Whether xdist may have run this test apart from the rest of its module: under
        ``loadgroup`` not a test its ``xdist_group`` mark keeps with its group (xdist then ends
        its node id with ``@<group>``; with pytest 9.2 and pytest-xdist 3.8 it does not, and a
        marked test is spread as an unmarked one is: pytest-dev/pytest-xdist#1386)."""
        if self.dist != "loadgroup":
            return True
        groups = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
        return not groups or not item.nodeid.endswith("@" + "_".join(sorted(groups)))

    def hint(self, errors: list[tuple[Any, str, str, str]]) -> str:
        """The section's text: each fixture with its kernel's first missing-state error, the cause, the fix.

        :param errors: ``(holder, kernel id, ename, evalue)`` of each such cell in the test, oldest first.
        :returns: the text, one line per fixture and one for the cause and the fix.
        """
        lines: dict[Any, str] = {}
        for holder, kernel_id, ename, evalue in errors:  # the first error of each fixture's kernels
            name, scope = self.fixtures.get(holder, ("?", "?"))
            lines.setdefault(holder, f"fixture {name!r} (scope {scope}) holds kernel {kernel_id}, whose cell raised "
                                     f"{ename}" + (f": {_short(evalue)}" if evalue else ""))
        return "\n".join([*lines.values(),
                          f"{'That kernel is' if len(lines) == 1 else 'Those kernels are'} this worker's "
                          f"({self.worker}) own: under -n {self.workers} with --dist "
                          f"{self.dist}, pytest-xdist runs one module's tests on different workers, each with its "
                          f"own module and session fixtures, so state another test set may be in another worker's "
                          f"kernel. Run the tests that share a kernel in one worker: --dist loadfile (or loadscope). "
                          f"README: One kernel for several tests."])


class _Holder:
    """The holder of the kernels made in one wider fixture's setup, when the leak checker marks none."""

    def __repr__(self) -> str:
        return "<wider-scoped fixture>"


def _short(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + "..."


def _add_section(report: pytest.TestReport, text: str) -> None:
    """Printed under the failure's traceback (with ``--show-capture=no`` too), and sent across
    from the worker with it; a report with no traceback takes it as a report section."""
    longrepr = report.longrepr
    if hasattr(longrepr, "addsection"):
        longrepr.addsection(TITLE, text)
    else:
        report.sections.append((TITLE, text))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, on the controller: each worker learns the run's ``--dist`` (its own reads ``no``)."""
    node.workerinput["hermes_dist"] = str(node.config.getoption("dist", "no"))


def pytest_configure(config: pytest.Config) -> None:
    """On a worker of a run whose ``--dist`` spreads a module's tests over two or more workers:
    register :class:`SplitHint` and let it hear every kernel start (until the run's end)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or workerinput.get("hermes_dist") not in SPLITTING or workerinput.get("workercount", 1) < 2:
        return
    plugin = SplitHint(workerinput["hermes_dist"], str(workerinput.get("workerid", "?")), int(workerinput["workercount"]))
    config.pluginmanager.register(plugin, "hermes-xdist-split")
    census.observe(plugin.on_census)
    config.add_cleanup(lambda: census.unobserve(plugin.on_census))
