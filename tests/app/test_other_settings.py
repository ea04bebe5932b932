"""The knob panel's "other settings" row (issue 37): any setting as `name = value`.

The row is the knob form's last stop: ↓ from the last knob reaches it (the panel scrolls at
120x36, where the knobs fill it), Enter checks it. Typed into the row, a setting joins the
knobs `r` runs; a value the server cannot take is one
line under the row (its range and unit), a setting naming a program or a file is refused
there, and the write-path names are offered as the user types.
"""

from __future__ import annotations

import time

from textual.pilot import Pilot
from textual.widgets import Input, Static

from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.othersettings import OtherSettings


async def opened(pilot: Pilot[int]) -> None:
    app = pilot.app
    assert isinstance(app, PgwxApp)
    deadline = time.monotonic() + 20
    while app.caps is None:
        assert time.monotonic() < deadline, "the app never reached the server"
        await pilot.pause(0.05)
    await pilot.pause(0.2)


async def typed(pilot: Pilot[int], text: str) -> str:
    """Type `text` into the row (replacing what it held); the reason line as shown."""
    field = pilot.app.query_one("#other-settings", Input)
    field.value = ""
    pilot.app.lab.knob_panel.reveal_other_settings()  # type: ignore[attr-defined]
    await pilot.pause(0.1)
    await pilot.press(*text)
    await pilot.pause(0.1)
    why = pilot.app.query_one("#other-why", Static)
    return str(why.render()) if why.display else ""


async def test_other_settings_join_the_knobs_and_bad_ones_are_one_line(
    pg18: Target, store: ResultStore
) -> None:
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        panel = app.lab.knob_panel
        assert await typed(pilot, "max_wal_size = 9000TB") == (
            "✗ max_wal_size = 9000TB is out of range: PostgreSQL "
            f"{app.caps.version} takes 2MB to 2147483647MB"  # type: ignore[union-attr]
        )
        refused = await typed(pilot, "archive_command = rm")
        assert refused.startswith("✗ pgwx never sets archive_command from a profile")
        assert await typed(pilot, "wal_compression = pglz, max_wal_size = 4GB") == ""
        assert panel.knobs().settings == {"wal_compression": "pglz", "max_wal_size": "4GB"}
        assert panel.query_one(OtherSettings).settings == panel.knobs().settings


async def test_the_write_path_names_are_offered_as_the_user_types(
    pg18: Target, store: ResultStore
) -> None:
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        await typed(pilot, "checkpoint_c")
        await pilot.press("right")  # take the suggestion
        field = app.query_one("#other-settings", Input)
        assert field.value == "checkpoint_completion_target"
        await pilot.press(*" = 0.9, max_wal_size = 1MB")
        field.scroll_visible(animate=False)
        await pilot.pause(0.3)
        app.save_screenshot("/tmp/pgwx-other-settings.svg")


async def test_arrow_keys_reach_the_row_and_enter_checks_it(
    pg18: Target, store: ResultStore
) -> None:
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        panel = app.lab.knob_panel
        field = app.query_one("#other-settings", Input)
        why = app.query_one("#other-why", Static)
        await pilot.press("1")  # the knobs pane, the workload choice focused
        for _ in range(20):
            if app.focused is field:
                break
            await pilot.press("down")
        assert app.focused is field
        # the panel scrolled to it: the row is inside the panel's visible region
        await pilot.pause(0.2)
        assert panel.scrollable_content_region.contains_region(field.region)
        await pilot.press("down")  # the form's last stop: the focus stays
        assert app.focused is field
        await pilot.press(*"max_wal_sise = 1GB", "enter")
        await pilot.pause(0.1)
        said = str(why.render())
        assert said.startswith("✗ max_wal_sise is not a setting of PostgreSQL ")
        assert "did you mean max_wal_size" in said and "\n" not in said
        field.value = ""
        await pilot.press(*"max_wal_size = 9000TB", "enter")
        await pilot.pause(0.1)
        assert str(why.render()).endswith(
            f"is out of range: PostgreSQL {app.caps.version} takes 2MB to 2147483647MB"
        )  # type: ignore[union-attr]
        field.value = ""
        await pilot.press(*"checkpoint_timeout = 15min", "enter")
        await pilot.pause(0.1)
        assert str(why.render()).startswith("✓ checkpoint_timeout")
        assert panel.knobs().settings == {"checkpoint_timeout": "15min"}
        await pilot.press("up")  # back to the last knob
        assert app.focused is panel.select("io_method")
