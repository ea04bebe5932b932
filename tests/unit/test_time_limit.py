"""The per-test time limit (tests/support/timeouts.py): a hang fails its own test, loudly,
and the session goes on — a blocking sleep, an awaited one under pytest-asyncio, a test that
swallows its cancel, a child process waited for."""

from __future__ import annotations

import re
import time

import pytest

from tests.support.paths import ROOT

HANGING = """
import asyncio
import subprocess
import time

import pytest

pytestmark = pytest.mark.time_limit(1)


def test_blocks_in_a_sleep():
    time.sleep(60)


@pytest.mark.asyncio
async def test_awaits_forever():
    await asyncio.Event().wait()


@pytest.mark.asyncio
async def test_swallows_its_cancel():
    try:  # as an undo that outlives the first cancel would
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        await asyncio.sleep(60)


def test_waits_for_a_child():
    subprocess.run(["sleep", "60"], check=False)


@pytest.mark.time_limit(30)
def test_after_them_all_runs():
    time.sleep(0.1)
"""


def test_a_hang_fails_its_own_test_loudly(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest(
        "import tests.support.timeouts as net\n"
        "net.ESCALATE = 1.0\n"
        'pytest_plugins = ["tests.support.timeouts"]\n'
    )
    pytester.makepyfile(test_hanging=HANGING)
    started = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    took = time.monotonic() - started
    result.assert_outcomes(failed=4, passed=1)  # and no error: every teardown went well
    out = result.stdout.str() + result.stderr.str()
    for name in (
        "blocks_in_a_sleep",
        "awaits_forever",
        "swallows_its_cancel",
        "waits_for_a_child",
    ):
        assert f"test_hanging.py::test_{name} ran past its time limit of 1 s (call)" in out, out
    assert "(most recent call first)" in out  # every thread's stack, printed
    assert "CancelledError: TestHung: test_hanging.py::test_awaits_forever" in out  # the task's
    assert "TestHung: test_hanging.py::test_blocks_in_a_sleep ran past" in out
    assert "its cancelled task did not end in 1 s: raising" in out
    assert took < 50, took  # four hangs of 60 s each, ended at 2 s (and 1 s more)


STUBBORN = """
import time

import pytest


@pytest.mark.time_limit(1)
def test_will_not_end():
    while True:
        try:
            time.sleep(60)
        except BaseException:
            pass


def test_never_reached():
    pass
"""


def test_a_test_that_will_not_end_takes_the_process_down_with_its_stacks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest(
        "import tests.support.timeouts as net\n"
        "net.HARD_GRACE = 2.0\n"
        'pytest_plugins = ["tests.support.timeouts"]\n'
    )
    pytester.makepyfile(test_stubborn=STUBBORN)
    started = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    took = time.monotonic() - started
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 1, out  # faulthandler's _exit(1), after its stacks:
    assert "Timeout (0:00:0" in out and re.search(r"line \d+ in test_will_not_end", out), out
    # the session was ended there: no summary, and the next test never ran
    assert not re.search(r"=+ .*\b(passed|failed)\b.* in [\d.]+s", out), out
    assert took < 60, took


SHARED = """
import time

import pytest


@pytest.fixture
def slow_setup():
    time.sleep(0.8)


@pytest.mark.time_limit(1)
def test_setup_and_call_past_the_limit_together(slow_setup):
    time.sleep(0.8)


@pytest.mark.time_limit(8)
def test_setup_and_call_within_the_limit_together(slow_setup):
    time.sleep(0.8)
"""


def test_a_tests_setup_and_call_share_one_limit(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.8 s of setup and 0.8 s of call, each under a 1 s limit but not together: the call is
    ended at what is left of the limit (issue 40, promise 11)."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest('pytest_plugins = ["tests.support.timeouts"]\n')
    pytester.makepyfile(test_shared=SHARED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(failed=1, passed=1)
    assert (
        "test_shared.py::test_setup_and_call_past_the_limit_together ran past its time limit "
        "of 1 s (call)" in out
    ), out
