"""The latency benchmarks say "ok" only when the goals hold, and never on a row whose
slowest press is over the goal (tui_latency printed `ok vs 100 ms goal` beside a max of
105.7 ms, issue 21). The benchmarks are scripts: loaded from their files."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.paths import ROOT


def _script(name: str) -> ModuleType:
    if f"bench_{name}" in sys.modules:
        return sys.modules[f"bench_{name}"]
    path = ROOT / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_tui_latency_says_when_the_max_is_over_the_goal() -> None:
    judged = _script("tui_latency").judged
    assert judged(30.0, 80.0, 90.0).startswith("ok")
    over_max = judged(30.0, 80.0, 105.7)
    assert not over_max.startswith("ok") and "max 106 ms > 100 ms" in over_max
    assert judged(30.0, 101.0, 120.0).startswith("OVER")
    assert judged(51.0, 90.0, 95.0).startswith("OVER")


@pytest.mark.parametrize(
    ("values", "timeouts", "start"),
    [
        ([20.0] * 19 + [55.0], 0, "ok"),
        ([20.0] * 19 + [90.0], 0, "goals met, but max 90 ms > 60 ms"),  # issue 39's goals
        ([20.0] * 19 + [117.0], 0, "goals met, but max 117 ms"),
        ([20.0] * 18 + [120.0, 130.0], 0, "OVER"),  # p95 over
        ([36.0] * 20, 0, "OVER"),  # median over 35 ms
        ([20.0] * 20, 1, "OVER"),  # a press that never showed is not ok
        ([], 0, "no press measured"),
    ],
)
def test_terminal_latency_verdicts(values: list[float], timeouts: int, start: str) -> None:
    assert _script("terminal_latency").judged(values, timeouts).startswith(start)


def test_terminal_latency_knows_each_layouts_markers() -> None:
    bench = _script("terminal_latency")
    assert bench.layout_of(80, 24, False) == "tabs"
    assert bench.layout_of(120, 36, False) == "grid"
    assert bench.layout_of(100, 30, False) == "present"
    assert bench.layout_of(120, 36, True) == "present"
    assert bench.layout_of(160, 45, False) == "grid"  # the projector needs --present
    assert bench.layout_of(160, 45, True) == "present"
    # where 1-4 only move the focus, the pane's border title is what changes
    assert bench.markers("grid", "4") == ("Results",)
    # where they bring a pane forward, its content (the tab bar alone would be too early)
    assert bench.markers("tabs", "1") == ("Workload",)
    assert bench.markers("present", "3") == ("Server activity",)
    # before any run (the idle reference) the duration pane and the chart say so
    assert bench.markers("tabs", "2", idle=True) == ("no run yet",)
    assert bench.markers("tabs", "3", idle=True) == ("waiting for samples",)
    assert bench.markers("present", "2", idle=True) == ("no run yet",)
    assert bench.markers("present", "3", idle=True) == ("Server activity",)
    assert bench.markers("grid", "2", idle=True) == ("Duration",)
    stripped = bench.ESCAPES.sub(b"", b"\x1b[1;31mWAL MiB/s \x1b[0m\x1b[12;4H(insert position)")
    assert stripped == b"WAL MiB/s (insert position)"


class _Blank:
    """A terminal where nothing a key draws ever arrives."""

    raw = bytearray()

    def pump(self, seconds: float) -> None:
        pass

    def text(self, start: int) -> str:
        return ""

    def write(self, data: str) -> float:
        return 0.0

    def wait_for(self, words: tuple[str, ...], start: int, timeout: float) -> None:
        return None


@pytest.mark.parametrize("running", [True, False], ids=["still running", "ended"])
def test_a_press_the_matrix_ended_around_is_left_out_not_timed_out(
    tmp_path: Path, running: bool
) -> None:
    """A matrix that ends during the quiet moment before a press shows its end card, not
    what the key draws during a run: that press is left out; a run still going is a real
    time-out."""
    bench = _script("terminal_latency")
    db = tmp_path / "results.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE runs (status TEXT)")
        con.execute("INSERT INTO runs VALUES (?)", ("running" if running else "finished",))
    tally = bench.Tally()
    bench.press(_Blank(), "2", ("s trial",), 0.0, tally, False, db)
    assert (tally.timeouts, tally.ended) == ((1, 0) if running else (0, 1))
    assert tally.ms == []


def test_terminal_latency_ratios_pool_old_and_new() -> None:
    """Old and new measured alternately: the ratio is new/old of the pooled figures."""
    bench = _script("terminal_latency")
    line = bench.ratio_line("80x24 tabs, quiet", [40.0] * 10 + [80.0], [20.0] * 10 + [60.0])
    assert "new/old median 0.50  p95 0.75" in line
    assert "not measured on both sides" in bench.ratio_line("x", [], [20.0])


def test_warm_starts_have_their_bytecode(tmp_path: Path) -> None:
    """A warm start is timed with pgwx's bytecode written: under PYTHONDONTWRITEBYTECODE (set
    on the build machine) each start compiled ~140 modules again, ~0.2 s of CPU."""
    env = _script("terminal_latency").app_env(
        {"PYTHONDONTWRITEBYTECODE": "1", "PGHOST": "elsewhere", "HOME": "/home/x"}, tmp_path
    )
    assert "PYTHONDONTWRITEBYTECODE" not in env and "PGHOST" not in env
    assert Path(env["PYTHONPYCACHEPREFIX"]).is_relative_to(tmp_path)
    assert env["HOME"] == "/home/x"
