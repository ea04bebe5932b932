"""While one long statement runs, the duration pane says what the backend is doing (issue 21).

During the deferred-FK COMMIT of the fk-timing-restore recording the pane once showed a
static `table 217.1 MiB` and a clock for seconds on end, while the samples already knew the
backend was on CPU, writing no WAL: the FK check. Mid-COMMIT the pane must name the phase,
the backend's top wait from the samples so far, and what the knob says the COMMIT does.
"""

from __future__ import annotations

from pathlib import Path

from explorer.lab.store.replay import ReplaySource, recordings_dir
from explorer.models import PhaseStarted, SampleTaken
from explorer.tui.widgets.duration import DurationPane
from tests.support.app import replay_app, settle

RECORDING = recordings_dir() / "fk-timing-restore.pgwx"


def mid_commit() -> tuple[int, str]:
    """A position 3 s into the deferred COMMIT, and its top wait from the raw samples."""
    events = list(ReplaySource.from_file(RECORDING).events)
    start = next(
        n
        for n, e in enumerate(events)
        if isinstance(e, PhaseStarted) and e.phase == "commit" and e.variant == "deferred"
    )
    began = events[start].at
    end = next(n for n in range(start, len(events)) if events[n].at > began + 3.0)
    counts: dict[str, float] = {}
    for e in events[start:end]:
        if isinstance(e, SampleTaken) and e.at >= events[end - 1].at - 2.5:
            for name, value in (e.sample.get("waits") or {}).items():
                counts[name] = counts.get(name, 0) + value
    return end, max(counts, key=lambda k: counts[k])


async def test_mid_commit_the_pane_names_the_wait_and_the_phase(tmp_path: Path) -> None:
    position, top = mid_commit()
    assert top == "CPU"  # the recording: the FK check runs on CPU
    app = replay_app(tmp_path, upto=position, fixture=RECORDING)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        view = app.lab.view
        assert view.phase == "commit" and view.variant == "deferred"
        now = app.lab.query_one(DurationPane).query_one("#duration-now")
        assert now.region.height > 0  # on screen, not in a hidden tab
        # What the trial block draws, as the compositor gets it (wrapped lines joined).
        shown = " ".join(
            " ".join(strip.text.split()) for strip in now.render_lines(now.region.reset_offset)
        )
        assert "COMMIT" in shown
        assert "checking the deferred FKs" in shown
        assert "on CPU" in shown and "no WAL" in shown
        # The size is said to be steady, not shown as if it were progress.
        assert "steady" in shown
