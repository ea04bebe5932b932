"""The shipped write-path profiles (issue 37, point 6) on real servers, small.

`wal-compression`: the UPDATE after a checkpoint logs as many full-page images with
compression as without, in fewer WAL bytes; every variant gets a verdict and the card names
WAL as the mechanism. It runs on the pip PostgreSQL 17 (lz4 and zstd built in). `max-wal-size`:
a sweep whose curve shows checkpoints, full-page images and WAL falling (three UPDATE passes:
each after a checkpoint images every page again), with a verdict per value on the card and
the mechanism beside each value in the curve.
"""

from __future__ import annotations

import itertools

from explorer.analysis.card import card_lines, story
from explorer.analysis.judge import judge
from explorer.analysis.report import summarize
from explorer.analysis.sweep import points
from explorer.lab.profiles.catalog import load_profile
from explorer.server.connect import Target
from tests.support.runs import RunProfile, update_mech

WORDS = ("faster", "slower", "same", "undecided")


async def test_wal_compression_profile_on_17_shrinks_the_images_not_their_number(
    pg17: Target, run_profile: RunProfile
) -> None:
    profile = load_profile("wal-compression").model_copy(
        update={"params": {"rows": 60_000}, "repeats": 7, "settle_seconds": 0}
    )
    record, _ = await run_profile(pg17, profile, sampler=True)
    off = update_mech(record, "off")
    for method in ("pglz", "lz4", "zstd"):
        mine = update_mech(record, method)
        for a, b in zip(off, mine, strict=True):
            assert a.wal_fpi and b.wal_fpi and abs(b.wal_fpi - a.wal_fpi) <= 0.2 * a.wal_fpi
            assert a.wal_bytes and b.wal_bytes and b.wal_bytes < 0.85 * a.wal_bytes
    judged = judge(record)
    rows = {(r.variant, r.phase): r for r in summarize(record, judged)}
    for method in ("pglz", "lz4", "zstd"):
        verdict = rows[(method, "update")].verdict
        assert verdict is not None and verdict.word in WORDS
    lines = {line.variant: story(line) for line in card_lines(record, judged)}
    for method in ("pglz", "lz4", "zstd"):
        assert "WAL " in lines[method], lines[method]


async def test_max_wal_size_profile_draws_checkpoints_and_images_falling(
    pg18: Target, run_profile: RunProfile
) -> None:
    profile = load_profile("max-wal-size").model_copy(update={"repeats": 5, "settle_seconds": 0})
    record, _ = await run_profile(pg18, profile, sampler=True, scale=0.3)
    for trial in record.trials:
        assert trial.status == "ok", trial.reason
    judged = judge(record)
    drawn = points(record, summarize(record, judged))
    checkpoints = [p.checkpoints for p in drawn]
    fpi = [p.fpi for p in drawn]
    wal = [p.wal_bytes for p in drawn]
    assert all(c is not None for c in checkpoints), checkpoints
    assert checkpoints[0] >= 2 and checkpoints[-1] == 0, checkpoints  # type: ignore[operator]
    assert checkpoints == sorted(checkpoints, reverse=True), checkpoints  # type: ignore[type-var]
    # each pass over the table after a checkpoint images every page again: without the
    # checkpoints the images (nearly) vanish, and the WAL they made with them
    assert all(f is not None for f in fpi) and all(w is not None for w in wal), (fpi, wal)
    assert fpi[0] > 10 * max(fpi[-1], 1), fpi  # type: ignore[operator]
    assert all(b <= a * 1.1 + 100 for a, b in itertools.pairwise(fpi)), fpi  # type: ignore[operator]
    assert wal[-1] < 0.8 * wal[0], wal  # type: ignore[operator]
    assert all(p.word in (*WORDS, "baseline") for p in drawn)
    # the card says the verdict for each value, and its mechanism where it moved
    lines = {line.variant: story(line) for line in card_lines(record, judged)}
    assert set(lines) == {f"max_wal_size={v}" for v in ("64MB", "256MB", "1GB", "4GB")}
