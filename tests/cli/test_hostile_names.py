"""No control character from a name reaches the terminal, on any command (issue 19 item 3).

A variant named `ESC ] 0 ; PWNED BEL ESC [ 2 J x` (set the title, clear the screen) and its
8-bit and bidirectional cousins come in through a profile (`pgwx run`) or a shared recording
(`import`, then `runs`, `report`, `compare`, `replay --headless`). Every byte those commands
write, on stdout and stderr, is checked: nothing below 0x20 but newline and tab, nothing in
0x7f–0x9f; the names still show, spelled as visible escapes.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from explorer.server.connect import Target
from explorer.text import printable
from tests.support.cli import FINISHED
from tests.support.hostile import CONTROL, HOSTILE, hostile_recording

"""`python -m explorer.cli` in a subprocess with a private store, journal and temp dir."""

Cli = Callable[..., subprocess.CompletedProcess[str]]


def assert_text_only(proc: subprocess.CompletedProcess[str], what: str) -> None:
    """The command succeeded and wrote nothing a terminal would obey."""
    assert proc.returncode in FINISHED, (what, proc.stderr)
    for name, out in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        found = CONTROL.search(out)
        assert found is None, f"{what} {name}: {found.group()!r} in {out[:400]!r}"


def test_shared_recording_names_are_text_on_every_command(tmp_path: Path, cli: Cli) -> None:
    path = hostile_recording(tmp_path)
    assert_text_only(cli("replay", str(path), "--headless"), "replay FILE")
    proc = cli("import", str(path))
    assert_text_only(proc, "import")
    run_id = re.search(r"run (\S+) \(", proc.stdout).group(1)  # type: ignore[union-attr]
    assert_text_only(cli("runs"), "runs")
    for fmt in ("md", "csv", "json"):
        proc = cli("report", run_id, "--format", fmt)
        assert_text_only(proc, f"report --format {fmt}")
        if fmt != "json":  # JSON spells it \\u001b, which is text too
            assert printable(HOSTILE["logged"]) in proc.stdout.replace("\\\\", "\\")
    for fmt in ("md", "json"):
        assert_text_only(cli("compare", run_id, run_id, "--format", fmt), f"compare {fmt}")
    proc = cli("replay", run_id, "--headless")
    assert_text_only(proc, "replay RUN")
    assert "\\x1b]0;PWNED" in proc.stdout + proc.stderr  # shown, as text


PROFILE = """
title = "names \\u001b]0;PWNED\\u0007"
workload = "table-kind"
repeats = 1
warmup = 0
settle_seconds = 0
params = {{ rows = 2000 }}
[[variants]]
name = "{logged}"
[[variants]]
name = "{unlogged}"
knobs = {{ table_kind = "unlogged" }}
"""


def test_run_progress_and_table_are_text(tmp_path: Path, cli: Cli, pg18: Target) -> None:
    def toml(name: str) -> str:
        return json.dumps(name)[1:-1]  # a TOML basic string reads JSON's \\u escapes

    profile = tmp_path / "hostile.toml"
    profile.write_text(
        PROFILE.format(logged=toml(HOSTILE["logged"]), unlogged=toml(HOSTILE["unlogged"]))
    )
    kw = pg18.connect_kwargs()
    dsn = f"postgresql://{kw['user']}@/{kw['database']}?host={kw['host']}&port={kw['port']}"
    proc = cli("run", str(profile), "--dsn", dsn, "--no-sample")
    assert_text_only(proc, "run")
    assert printable(HOSTILE["logged"]) in proc.stdout.replace("\\\\", "\\")
    assert "\\x1b]0;PWNED" in proc.stderr  # the progress names the variant, as text
