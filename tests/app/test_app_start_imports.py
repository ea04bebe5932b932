"""`pgwx` needs no Markdown parser, for its first screen or its help (issue 39, point 7).

The help screen was a Markdown widget: markdown-it, pygments and linkify, about 130 modules
(~40-140 ms of CPU on the 2-core build machine) that `pgwx` imported before its first frame,
then on `?`. The help is drawn by the app itself now (`explorer/tui/screens/help.py`). A fresh
process opens the app on a recording, draws its screen, then opens the help.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.cli import private_env
from tests.support.paths import DURABILITY

HELP_ONLY = ("markdown_it", "pygments", "linkify_it")
"""Packages Textual's Markdown widget needs."""

PROBE = """
import asyncio, sys
from pathlib import Path
import explorer.cli.entry  # what `pgwx` imports
from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp

only = sys.argv[1].split(",")

def loaded():
    return ",".join(sorted({m.split(".")[0] for m in sys.modules} & set(only)))

async def main():
    app = PgwxApp(
        replay=ReplaySource.from_file(Path(sys.argv[2])),
        store=ResultStore(Path(sys.argv[3])),
        ascii=False,
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        print("DRAWN:" + loaded())
        await pilot.press("?")
        await pilot.pause(0.2)
        print("HELP:" + type(app.screen).__name__ + ":" + loaded())

asyncio.run(main())
"""


def test_the_first_screen_and_the_help_come_without_a_markdown_parser(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            PROBE,
            ",".join(HELP_ONLY),
            str(DURABILITY),
            str(tmp_path / "results.sqlite"),
        ],
        capture_output=True,
        text=True,
        env=private_env(tmp_path),
        cwd=tmp_path,
        timeout=180,
    )
    said = {
        line.split(":", 1)[0]: line.split(":", 1)[1]
        for line in proc.stdout.splitlines()
        if line.startswith(("DRAWN:", "HELP:"))
    }
    assert proc.returncode == 0 and set(said) == {"DRAWN", "HELP"}, proc.stderr[-3000:]
    assert said["DRAWN"] == ""  # the lab on screen, none of the help's packages loaded
    screen, loaded = said["HELP"].split(":")
    assert screen == "HelpScreen"  # `?` opens the help
    assert loaded == ""  # and still none of them
