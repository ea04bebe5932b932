"""Announced trial counts never grow under the reader (issue 39): quick-demo's `m` said
`18 trials`, then counted to `[27/27]` — its auto repeats planned the first look's rounds and
raised the count with every round after it. The count now says from the start the most the
run may take (`up to 27 trials`, `[5/≤27]`); the run may end sooner, never later.

A real run of quick-demo (3 variants, a warm-up, 5 to 8 rounds) on PG 18 at a small scale,
watched in the app: the header, the duration pane and the log keep one total from the start.
"""

from __future__ import annotations

import re

from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.header import ServerHeader
from tests.support.app import connected, log_text, wait_for


async def test_the_trial_count_is_the_runs_most_from_its_start(
    pg18: Target, store: ResultStore
) -> None:
    async with PgwxApp(target=pg18, store=store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        panel = lab.knob_panel
        panel.choose_profile("quick-demo")
        panel.select("scale").value = 0.01
        await pilot.pause()
        profile = panel.profile
        assert profile is not None and profile.repeats == "auto"
        most = len(profile.variants) * (profile.warmup + profile.max_repeats)
        first_look = len(profile.variants) * (profile.warmup + profile.min_repeats)
        assert most > first_look  # else the test shows nothing
        header = lab.query_one(ServerHeader)
        await pilot.press("m")
        await wait_for(pilot, lambda: lab.view.status == "running", 30)
        seen: set[str] = set()
        while lab.view.status == "running":
            if lab.view.trial_index:
                seen.add(re.sub(r"^\S+ (\d+)/", "", header.run))
            await pilot.pause(0.1)
        await wait_for(pilot, lambda: not lab.busy(), 60)
        assert lab.view.status == "finished", lab.view.reason
        said = log_text(lab)  # without whitespace
        assert f"upto{most}trials" in said, said[:400]
        counts = re.findall(r"\[(\d+)/(≤?)(\d+)\]", said)
        assert counts, said[:400]
        assert {(le, int(n)) for _, le, n in counts} == {("≤", most)}, counts
        assert max(int(i) for i, _, _ in counts) <= most
        # the header said the same total all along: '5/≤27 running'
        assert seen == {f"≤{most} running"}, seen
        assert lab.view.count.endswith(f"/≤{most}")
