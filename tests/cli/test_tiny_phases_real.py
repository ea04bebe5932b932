"""Tiny phases on a real server (issue 33, point 2): at --scale 0.05 quick-demo's phases are a
few milliseconds, timed by pgwx's own clock, and are judged as ratios with their word.

They were all "same within ±50 ms" — `unlogged insert −3.4 ms same within ±50 ms` at adjusted
p 0.0037, 7.1 ms against 3.2 ms — because every phase below 50 ms was judged in seconds
against a polling resolution that only pg_restore's COMMIT has.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer import cli
from explorer.server.connect import Target


def test_quick_demo_at_a_twentieth_scale_gets_ratios_and_words(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    for var in cli.LIBPQ_ENV:
        monkeypatch.delenv(var, raising=False)
    assert pg18.bundled is not None
    argv = ["run", "quick-demo", "--data-dir", str(pg18.bundled.data_dir)]
    argv += ["--scale", "0.05", "--repeats", "6", "--warmup", "0", "--settle", "0"]
    code = cli.main([*argv, "--no-sample", "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 4), err
    rows = json.loads(out)["rows"]
    judged = [r for r in rows if r["verdict"] and r["verdict"]["word"] != "baseline"]
    assert judged
    base = {r["phase"]: r["median"] for r in rows if r["variant"] == "logged"}
    for row in judged:
        v = row["verdict"]
        assert "within ±50 ms" not in v["label"], (row["variant"], row["phase"], v["label"])
        # Both sides timed above the clock's 1 ms resolution: a ratio, whatever the size.
        if min(row["median"], base[row["phase"]]) >= 0.001:
            assert v["ratio"] is not None and "×" in v["label"], v["label"]
        else:  # a select can take under a millisecond: then it is said so
            said = ("(below 1 ms)", "tiny", "(clock resolution)")
            assert any(words in v["label"] for words in said), v["label"]
    insert = next(r for r in judged if (r["variant"], r["phase"]) == ("unlogged", "insert"))
    assert insert["median"] < 0.05  # the case the issue was about: a phase under 50 ms
    assert insert["verdict"]["word"] in ("faster", "slower", "same", "undecided")
    assert insert["verdict"]["label"].split(" ")[0].endswith("×")
