"""A per-test time limit from the standard library: one hang fails one test, loudly.

Loaded by tests/conftest.py as a plugin (pytest-timeout is not a dependency). Each test's
setup and call share one limit, its teardown gets one of its own: TIME_LIMIT seconds,
`@pytest.mark.time_limit(seconds)` for a test that needs another, PGWX_TEST_TIME_LIMIT for
the whole session (0 turns the net off, say under a debugger). When a phase runs past it:

1. every thread's stack and every asyncio task's are printed, and the test is ended: an
   async test (pytest-asyncio runs it as a task in the main thread) is cancelled where it
   waits, anything else (a `time.sleep`, a `subprocess.run`, a blocking socket) gets
   `TestHung` raised where it stands, by SIGALRM;
2. ESCALATE seconds later, if a cancelled task has not ended (it shields an undo, it
   swallowed the cancel), `TestHung` is raised in the main thread as well;
3. HARD_GRACE seconds after the limit, faulthandler prints the stacks again and ends the
   whole process: CI then fails within minutes instead of stalling for 90.

A test that ended by the net fails with "TestHung: … ran past its time limit of N s".
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import inspect
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Generator, Iterator
from typing import Any

import pytest

TIME_LIMIT = 600.0
"""Seconds a test's setup and call may take together (its teardown as many again)."""
ESCALATE = 30.0
"""Seconds a cancelled async test gets to end before TestHung is raised in it."""
HARD_GRACE = 120.0
"""Seconds past the limit after which the whole process ends, with every stack printed."""
MARKER = "time_limit(seconds): this test's own limit (see tests/support/timeouts.py)"


class TestHung(BaseException):
    """A test ran past its time limit (BaseException, so `except Exception` cannot eat it)."""

    __test__ = False  # not a test class, whatever its name


_REAL_STDERR: int | None = None
"""A copy of the terminal's stderr, taken before any capture: the last-resort dump must be
seen even though the process ends inside a test whose output pytest is capturing."""


def pytest_configure(config: pytest.Config) -> None:
    global _REAL_STDERR
    config.addinivalue_line("markers", MARKER)
    with contextlib.suppress(AttributeError, ValueError, OSError):
        _REAL_STDERR = os.dup(sys.stderr.fileno())


def pytest_unconfigure(config: pytest.Config) -> None:
    global _REAL_STDERR
    if _REAL_STDERR is not None:
        with contextlib.suppress(OSError):
            os.close(_REAL_STDERR)
        _REAL_STDERR = None


def limit_for(item: pytest.Item) -> float:
    """The item's limit in seconds (0: none)."""
    marker = item.get_closest_marker("time_limit")
    if marker is not None:
        return float(marker.args[0] if marker.args else marker.kwargs["seconds"])
    return float(os.environ.get("PGWX_TEST_TIME_LIMIT", TIME_LIMIT))


class _Alarm:
    """SIGALRM armed for one phase of one test."""

    def __init__(self, item: pytest.Item, limit: float, left: float, what: str) -> None:
        self.item = item
        self.limit = limit
        self.left = left
        self.what = what
        self.cancelled: list[asyncio.Task[Any]] = []
        self.fired = False

    def _test_code(self) -> types.CodeType | None:
        func = getattr(self.item, "obj", None)
        code = getattr(inspect.unwrap(func), "__code__", None) if func is not None else None
        return code if isinstance(code, types.CodeType) else None

    def _tasks_of_the_test(self, loop: asyncio.AbstractEventLoop) -> list[asyncio.Task[Any]]:
        """The running loop's tasks that run the test's own coroutine."""
        code = self._test_code()
        return [
            t
            for t in asyncio.all_tasks(loop)
            if code is not None and getattr(t.get_coro(), "cr_code", None) is code
        ]

    def _say(self, text: str) -> None:
        print(f"\n\n*** {text}", file=sys.stderr, flush=True)

    def _dump(self, loop: asyncio.AbstractEventLoop | None) -> None:
        try:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        except (AttributeError, ValueError, OSError):  # --capture=sys: no file descriptor
            if _REAL_STDERR is not None:
                faulthandler.dump_traceback(file=_REAL_STDERR, all_threads=True)
        if loop is not None:
            for task in asyncio.all_tasks(loop):
                print(f"--- {task!r}", file=sys.stderr)
                with contextlib.suppress(Exception):
                    task.print_stack(file=sys.stderr)
        sys.stderr.flush()

    def handler(self, _signo: int, _frame: types.FrameType | None) -> None:
        """SIGALRM: end the test, gently first (cancel its task), then by force."""
        why = f"{self.item.nodeid} ran past its time limit of {self.limit:g} s ({self.what})"
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if self.fired:
            self._say(f"{why}; its cancelled task did not end in {ESCALATE:g} s: raising")
            raise TestHung(why)
        self.fired = True
        self._say(f"{why}: every thread's and task's stack follows")
        self._dump(loop)
        tasks = self._tasks_of_the_test(loop) if loop is not None else []
        if loop is None or not tasks:
            raise TestHung(why)
        for task in tasks:
            # thread-safe: it wakes the loop out of its select, as a plain cancel would not
            loop.call_soon_threadsafe(task.cancel, f"TestHung: {why}")
        self.cancelled = tasks
        signal.setitimer(signal.ITIMER_REAL, ESCALATE)

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        previous = signal.signal(signal.SIGALRM, self.handler)
        signal.setitimer(signal.ITIMER_REAL, self.left)
        last = sys.stderr if _REAL_STDERR is None else _REAL_STDERR
        faulthandler.dump_traceback_later(self.left + HARD_GRACE, exit=True, file=last)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            faulthandler.cancel_dump_traceback_later()
            signal.signal(signal.SIGALRM, previous)


def _usable() -> bool:
    """Signals reach Python only in the main thread (and SIGALRM only on POSIX)."""
    return hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()


_DEADLINES: dict[str, float] = {}
"""nodeid → when its setup and call must be done (monotonic)."""


def _phase(item: pytest.Item, what: str) -> contextlib.AbstractContextManager[None]:
    limit = limit_for(item)
    if limit <= 0 or not _usable():
        return contextlib.nullcontext()
    now = time.monotonic()
    if what == "teardown":
        left = limit
    else:
        left = _DEADLINES.setdefault(item.nodeid, now + limit) - now
    return _Alarm(item, limit, max(left, 0.001), what).armed()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _phase(item, "setup"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _phase(item, "call"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    try:
        with _phase(item, "teardown"):
            return (yield)
    finally:
        _DEADLINES.pop(item.nodeid, None)
