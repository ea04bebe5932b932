"""The CLI tells a run's story in the end card's words (issue 21).

`pgwx report` (and `pgwx replay --headless`) print under the table the lines the app's end
card shows: per variant the verdict and the phase that moved most with its own before →
after, from the table's own medians — so the CLI, the card and the README say one thing.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path


def table_medians(markdown: str) -> dict[tuple[str, str], float]:
    """(variant, phase) → median seconds, read from the printed table itself."""
    out = {}
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 5 and re.fullmatch(r"\d+\.\d+", cells[4] or ""):
            out[(cells[0], cells[1])] = float(cells[4])
    return out


def test_the_report_prints_the_cards_story_with_the_tables_numbers(
    cli: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    recording = Path(__file__).parents[2] / "profiles" / "recordings" / "fk-timing-restore.pgwx"
    done = cli("import", str(recording))
    assert done.returncode == 0, done.stderr
    report = cli("report", "latest")
    assert report.returncode == 0, report.stderr
    out = report.stdout
    medians = table_medians(out)
    before, after = medians[("none", "commit")], medians[("deferred", "commit")]
    story = next(line for line in out.splitlines() if line.startswith("- deferred "))
    # The verdict first, then the phase that moved: COMMIT, from the table's medians.
    assert "slower" in story and story.index("slower") < story.index("commit")
    shown = re.search(r"commit ([\d.]+) (ms|s) → ([\d.]+) (ms|s)", story)
    assert shown is not None, story
    as_s = [float(shown[1]) / (1000 if shown[2] == "ms" else 1), float(shown[3])]
    if shown[4] == "ms":
        as_s[1] /= 1000
    assert abs(as_s[0] - before) < 0.001 and abs(as_s[1] - after) < 0.01, (story, before, after)
    assert "fsyncs" not in story
    assert "In short" in out
