"""Python's full collections are made when no key waits (issue 21: key latency).

A full pass in a live matrix took 40–60 ms (twice that beside a busy process) and began in the
middle of a key's work six times of six; the collector takes them over from Python.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from explorer.tui.collector import NEVER, OVERDUE, QUIET, QuietCollector
from tests.support.costs import full_passes, make_garbage_until


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def passes() -> Iterator[list[int]]:
    with full_passes() as started:
        yield started


@pytest.fixture
def collector() -> Iterator[QuietCollector]:
    clock = Clock()
    taken = QuietCollector(clock)
    taken.install()
    try:
        yield taken
    finally:
        taken.uninstall()


def test_python_starts_no_full_pass_while_installed_and_gets_its_thresholds_back(
    passes: list[int],
) -> None:
    before = gc.get_threshold()
    taken = QuietCollector()
    taken.install()
    try:
        assert gc.get_threshold() == (before[0], before[1], NEVER)
        assert gc.get_freeze_count() > 0  # start-up's objects are kept out of full passes
        passes.clear()  # install's own pass, before the freeze
        make_garbage_until(lambda: taken.overdue() or passes)
        # Python would have made several by now (one per `before[2]` young passes).
        assert passes == []
        assert gc.get_count()[2] > before[2] * OVERDUE
    finally:
        taken.uninstall()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert not taken.due()  # nothing decided once uninstalled


def test_a_due_pass_waits_for_the_keys_screen_update(
    collector: QuietCollector, passes: list[int]
) -> None:
    make_garbage_until(collector.due)
    first = collector.key_pressed()
    second = collector.key_pressed()
    assert not collector.after_key(first)  # another key came since: it has not been drawn
    assert not collector.tick()  # a key a moment ago: not a quiet moment
    assert passes == []
    assert collector.after_key(second)
    assert passes == [1] and collector.made == ["after key"]
    assert not collector.due()
    assert not collector.after_key(second)  # nothing due: no second pass


def test_a_due_pass_is_made_in_a_quiet_moment_or_when_overdue(
    collector: QuietCollector, passes: list[int]
) -> None:
    clock = collector._clock
    assert isinstance(clock, Clock)
    collector.key_pressed()
    assert not collector.tick()  # nothing due yet
    make_garbage_until(collector.due)
    clock.now += QUIET / 2
    assert not collector.tick()  # due, but a key came a moment ago
    clock.now += QUIET
    assert collector.tick()
    assert passes == [1] and collector.made == ["quiet"]
    # Keys that never stop: the pass is made anyway once it is OVERDUE times late.
    make_garbage_until(collector.due)
    collector.key_pressed()
    assert not collector.tick()
    make_garbage_until(collector.overdue)
    collector.key_pressed()
    assert collector.tick()
    assert passes == [1, 1] and collector.made == ["quiet", "overdue"]


def test_a_collector_left_installed_does_not_hand_its_never_to_the_next() -> None:
    """An app that never unmounted left its collector installed; the next app's collector
    took Python's thresholds as the NEVER it had set, never found a pass due, and every later
    collector test in the suite failed ("the condition never came")."""
    before = gc.get_threshold()
    left = QuietCollector()
    left.install()
    taken = QuietCollector()
    taken.install()
    try:
        assert not left.installed
        assert gc.get_threshold() == (before[0], before[1], NEVER)
    finally:
        taken.uninstall()
        left.uninstall()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
