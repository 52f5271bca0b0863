"""A leak check that could not look is never a clean check: a probe that raises, or a transport
whose host does not answer, makes the report name what went unchecked (and why) instead of
reading it as "nothing there" (a silent pass); a part that could not be looked at before the test
reports no leak and ends nothing there (everything it sees after could be old)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pytest_hermes_kernel.kernel.contract import note_activity
from pytest_hermes_kernel.leaks import probes
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.transports import close_transport, forget_closed_transports, make_transport, register_transport
from tests.support import FarSide


class Flaky:
    """A probe's snapshot function that raises while ``down`` is set."""

    def __init__(self) -> None:
        self.down = False
        self.found: dict[str, str] = {}
        self.ended: list[str] = []

    def snapshot(self) -> dict[str, str]:
        if self.down:
            raise ConnectionResetError("host did not answer")
        return dict(self.found)


@pytest.fixture
def flaky() -> Flaky:
    return Flaky()


@pytest.fixture
def checker(flaky: Flaky) -> LeakChecker:
    return LeakChecker([probes.Probe("remote thing", flaky.snapshot, flaky.ended.append)], grace=0.0)


def test_a_probe_that_raises_after_the_test_is_reported_unchecked_not_clean(flaky, checker):
    before = checker.before()
    flaky.down = True
    flaky.found["t1"] = "a leaked thing it cannot see"

    report = checker.after(before)

    assert not report.leaks.get("remote thing")
    assert report.unchecked == {"remote thing": "ConnectionResetError: host did not answer"}
    assert "not checked: remote thing: ConnectionResetError: host did not answer" in report.format_unchecked("t::x")
    assert checker.last_clean is None  # the next test looks afresh instead of starting from a blind snapshot


def test_a_probe_blind_before_the_test_reports_no_leak_and_ends_nothing(flaky, checker):
    flaky.found["old"] = "there before the test (the probe could not see it then)"
    flaky.down = True
    before = checker.before()
    flaky.down = False

    report = checker.after(before)
    checker.cleanup(report)

    assert not report and flaky.ended == []
    assert report.unchecked == {"remote thing (before the test)": "ConnectionResetError: host did not answer"}


def test_a_probe_that_answers_again_is_checked_again(flaky, checker):
    flaky.down = True
    checker.after(checker.before())
    flaky.down = False
    before = checker.before()
    flaky.found["t2"] = "new"

    report = checker.after(before)

    assert report.leaks == {"remote thing": {"t2": "new"}} and report.unchecked == {}


class Silent(FarSide):
    """A transport whose host stops answering the leak probe when ``silent`` is set."""

    name = "silent"
    silent = False

    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        if self.silent:
            self.visits += 1
            raise TimeoutError("no answer in 10 s")
        return super().leak_snapshot(host_pid)

    def describe(self) -> str:
        return f"silent (host {id(self)})"


@pytest.fixture
def two_hosts() -> Any:
    register_transport("silent", Silent)
    made = [make_transport("silent"), make_transport("silent")]
    yield made
    for transport in made:
        close_transport(transport)
    forget_closed_transports()


def test_one_silent_host_is_named_and_the_others_are_still_checked(two_hosts):
    quiet, talking = two_hosts
    resources = probes.TransportResources()
    checker = LeakChecker([probes.Probe("transport resource", resources.snapshot, resources.cleanup,
                                        kinds_in_identity=True, fresh=resources.fresh)], grace=0.0)
    before = checker.before()
    quiet.silent = True
    quiet.far["silent:a"] = "unseen"
    talking.far["silent:b"] = "pid 7 (kernel k-b)"
    note_activity()  # what the test's kernel calls and channel frames note

    report = checker.after(before)

    assert report.leaks == {"remote kernel process": {"remote kernel process|silent:b": "pid 7 (kernel k-b)"}}
    assert report.unchecked == {quiet.describe(): "TimeoutError: no answer in 10 s"}
    visits = quiet.visits
    resources.snapshot()
    assert quiet.visits == visits + 1  # a snapshot with a silent host is never reused: it looks again


@pytest.fixture
def third_host() -> Any:
    """``third_host(name, cls)``: one more live transport of class ``cls``, closed after the test."""
    made: list[Any] = []

    def make(name: str, cls: type) -> Any:
        register_transport(name, cls)
        made.append(make_transport(name))
        return made[-1]

    yield make
    for transport in made:
        close_transport(transport)
    forget_closed_transports()


def _transport_checker() -> tuple[probes.TransportResources, LeakChecker]:
    resources = probes.TransportResources()
    return resources, LeakChecker([probes.Probe("transport resource", resources.snapshot, resources.cleanup,
                                                kinds_in_identity=True, fresh=resources.fresh,
                                                places=resources.places)], grace=0.0)


def test_a_host_blind_before_the_test_hides_only_what_it_alone_sees(two_hosts):
    quiet, talking = two_hosts
    quiet.silent = True
    resources, checker = _transport_checker()
    before = checker.before()
    quiet.silent = False
    quiet.far["silent:old"] = "there before the test, unseen then"
    talking.far["silent:new"] = "pid 8 (kernel k-new)"
    note_activity()

    report = checker.after(before)

    assert report.leaks == {"remote kernel process": {"remote kernel process|silent:new": "pid 8 (kernel k-new)"}}
    assert report.unchecked == {f"{quiet.describe()} (before the test)": "TimeoutError: no answer in 10 s"}


class Nameless(Silent):
    """A transport whose describe() raises as well."""

    name = "nameless"

    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        if self.silent:
            raise TimeoutError("no answer in 10 s")
        return {"remote kernel process": dict(self.far)}

    def describe(self) -> str:
        raise RuntimeError("describe needs the host too")


def test_a_describe_that_raises_keeps_the_scans_own_error_and_the_other_hosts_checked(two_hosts, third_host):
    nameless = third_host("nameless", Nameless)
    _, talking = two_hosts
    resources, checker = _transport_checker()
    before = checker.before()
    nameless.silent = True
    talking.far["silent:c"] = "pid 9 (kernel k-c)"
    note_activity()

    report = checker.after(before)

    assert report.leaks == {"remote kernel process": {"remote kernel process|silent:c": "pid 9 (kernel k-c)"}}
    assert len(report.unchecked) == 1, report.unchecked
    [(what, why)] = report.unchecked.items()
    assert what.startswith("nameless transport (describe() failed: RuntimeError('describe needs the host too'))")
    assert why == "TimeoutError: no answer in 10 s"


def test_a_probe_wholly_blind_before_the_test_compares_nothing_and_ends_nothing(two_hosts):
    """The transport probe as a whole raised before the test (not one host of it): what every
    host shows after could be old, so none of it is a leak, and nothing is ended."""
    quiet, talking = two_hosts
    talking.far["silent:old"] = "pid 5 (a module-scoped fixture's kernel, alive all along)"
    resources, checker = _transport_checker()
    ended: list[str] = []
    checker.probes = [dataclasses.replace(checker.probes[0], snapshot=lambda: 1 / 0, cleanup=ended.append)]
    before = checker.before()
    checker.probes = [dataclasses.replace(checker.probes[0], snapshot=resources.snapshot)]
    note_activity()

    report = checker.after(before)
    checker.cleanup(report)

    assert not report and ended == [], report.leaks
    assert report.unchecked == {"transport resource (before the test)": "ZeroDivisionError: division by zero"}


class Malformed(Silent):
    """A transport whose leak snapshot is malformed (a bug of a third-party backend's probe)."""

    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        return {"remote kernel process": None}  # type: ignore[dict-item]


def test_a_malformed_answer_blinds_that_host_only(two_hosts, third_host):
    malformed = third_host("malformed", Malformed)
    _, talking = two_hosts
    resources, checker = _transport_checker()
    before = checker.before()
    talking.far["silent:d"] = "pid 10 (kernel k-d)"
    note_activity()

    report = checker.after(before)

    assert report.leaks == {"remote kernel process": {"remote kernel process|silent:d": "pid 10 (kernel k-d)"}}
    assert list(report.unchecked) == [f"{malformed.describe()} (before the test)", malformed.describe()]


class SameLine:
    """A transport as the probe names it: several describe() the same line (same options)."""

    name = "same"

    def describe(self) -> str:
        return "docker (engine default, image hermes-kernel-host:latest)"


def test_two_live_transports_never_share_a_name_in_the_report():
    """Labels of transports that describe() alike get ``#2``, ``#3``...; one that was garbage
    collected freed its entry, and the next one got the number of a live one (``#3`` twice): a host
    blind before the test then hid what the other, which had looked, saw after."""
    import gc

    resources = probes.TransportResources()
    first, second, third = SameLine(), SameLine(), SameLine()
    names = [resources.label(t) for t in (first, second, third)]
    del second
    gc.collect()
    fourth = SameLine()

    assert len(set(names)) == 3 and resources.label(fourth) not in {resources.label(first), resources.label(third)}


def test_a_closed_host_that_cannot_be_looked_at_is_named_once_then_no_more(two_hosts):
    """A closed transport is probed again only while it shows something to end; one whose host
    does not answer (an sshd the test killed, then closed) is named as not checked by the check
    after its test, never by every later test's."""
    quiet, _ = two_hosts
    resources = probes.TransportResources()
    quiet.silent = True
    close_transport(quiet)

    first = resources.snapshot()
    resources.fresh()  # a re-check of the same check looks again (it is still that check's)
    again = resources.snapshot()
    visits = quiet.visits
    later = resources.snapshot()  # the next check's look (a blind look is never reused)

    assert probes.UNCHECKED + quiet.describe() in first and probes.UNCHECKED + quiet.describe() in again
    assert quiet.visits == visits
    assert not any(key.startswith(probes.UNCHECKED) for key in later)


def test_a_probe_without_places_partly_blind_before_the_test_compares_nothing():
    """A probe of several places that does not say which place saw what (no ``places``, e.g. one
    a user registers) and had a part it could not look at before the test: what it sees after
    could be old, so none of it is a leak and nothing is ended (no test failed without this)."""
    seen = {"far:old": "there all along, in the part that was blind"}
    ended: list[str] = []
    states = iter([{probes.UNCHECKED + "host b": "TimeoutError: no answer", "far:a": "host a's"},
                   dict(seen, **{"far:a": "host a's"})])
    checker = LeakChecker([probes.Probe("far thing", lambda: next(states), ended.append)], grace=0.0)
    before = checker.before()

    report = checker.after(before)
    checker.cleanup(report)

    assert not report and ended == [], report.leaks
    assert report.unchecked == {"host b (before the test)": "TimeoutError: no answer"}


def test_what_a_host_that_looked_before_sees_is_compared_even_if_a_blind_one_sees_it_too(two_hosts):
    """One thing seen through two transports (the run's container, seen by docker and by ssh; one
    container's kernel, by two docker transports): a host that looked before the test vouches for
    it, so it is compared, even if another that sees it too was blind then (no test failed when
    any one blind place hid it)."""
    quiet, talking = two_hosts
    quiet.silent = True
    resources, checker = _transport_checker()
    before = checker.before()
    quiet.silent = False
    for host in (quiet, talking):
        host.far["silent:shared"] = "pid 11 (kernel k-shared)"
    note_activity()

    report = checker.after(before)

    assert report.leaks == {"remote kernel process": {"remote kernel process|silent:shared": "pid 11 (kernel k-shared)"}}
