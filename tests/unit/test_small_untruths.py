"""Small untruths (issue 33, point 6): a duration interval below zero, "no baseline phase"
before the baseline has run, and a FIFO called a file that does not exist."""

from __future__ import annotations

import os
from pathlib import Path

from explorer.analysis.calibration import synthetic_record, synthetic_trial
from explorer.analysis.judge import judge
from explorer.analysis.report import SummaryRow
from explorer.analysis.verdict import POLLED_FLOOR_SECONDS, compare
from explorer.files import input_problem
from explorer.models import Profile, Variant
from explorer.tui.widgets.duration import clipped, interval_seconds


def test_a_difference_interval_never_puts_a_duration_below_zero() -> None:
    """`immediate 4 ms [-4–7]`: the baseline's 4 ms plus a difference interval from −8 ms."""
    base = [0.004, 0.0035, 0.0045, 0.012, 0.0038, 0.0041]
    cand = [0.005, 0.006, 0.0042, 0.0047, 0.0052, 0.0055]
    v = compare(base, cand, floor_seconds=POLLED_FLOOR_SECONDS)  # a polled COMMIT
    assert v.diff_ci_low is not None and v.median_baseline is not None
    assert v.median_baseline + v.diff_ci_low < 0  # the raw bound would be negative
    row = SummaryRow("cand", "commit", 6, verdict=v)
    span = interval_seconds(row)
    assert span is not None and span[0] == 0.0 and span[1] >= 0.0
    assert clipped(row)


def _profile() -> Profile:
    return Profile(
        name="p",
        title="t",
        workload="synthetic",
        repeats=5,
        warmup=0,
        variants=[Variant(name="base"), Variant(name="cand")],
    )


def test_no_baseline_trial_yet_while_the_baseline_has_not_run() -> None:
    trials = [synthetic_trial("cand", 1, {"load": 1.0, "commit": 0.2})]
    record = synthetic_record(_profile(), trials)
    record.status = "running"
    v = judge(record).verdicts[("cand", "load")]
    assert v.no_baseline and v.label() == "no baseline trial yet"
    # The same trials in a finished run: the baseline never ran, that is what to say.
    record.status = "finished"
    assert judge(record).verdicts[("cand", "load")].label() == "no baseline phase"


def test_a_phase_only_the_variant_has_still_says_no_baseline_phase_mid_run() -> None:
    trials = [
        synthetic_trial("base", 1, {"load": 1.0}),
        synthetic_trial("cand", 1, {"load": 1.0, "add-fk": 0.3}),
    ]
    record = synthetic_record(_profile(), trials)
    record.status = "running"
    assert judge(record).verdicts[("cand", "add-fk")].label() == "no baseline phase"


def test_input_problems_name_what_is_wrong(tmp_path: Path) -> None:
    assert input_problem(tmp_path / "nope.csv") == "does not exist"
    os.mkfifo(tmp_path / "pipe")
    assert input_problem(tmp_path / "pipe") == "is not a regular file (a FIFO)"
    assert input_problem(tmp_path) == "is not a regular file (a directory)"
    big = tmp_path / "big.csv"
    big.write_bytes(b"x" * 2048)
    assert input_problem(big) is None
    assert input_problem(big, max_bytes=1024) == "is too large (2,048 bytes; at most 1,024)"
