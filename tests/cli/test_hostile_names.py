"""No control character from a name reaches the terminal, on any command (issue 19 item 3).

A variant named `ESC ] 0 ; PWNED BEL ESC [ 2 J x` (set the title, clear the screen) and its
8-bit and bidirectional cousins come in through a profile (`pgwx run`) or a shared recording
(`import`, then `runs`, `report`, `compare`, `replay --headless`). Every byte those commands
write, on stdout and stderr, is checked: nothing below 0x20 but newline and tab, nothing in
0x7f–0x9f; the names still show, spelled as visible escapes.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from explorer.lab.store.recording import write_recording
from explorer.lab.store.replay import recordings_dir
from explorer.server.connect import Target
from explorer.text import printable
from tests import test_bad_input

cli = test_bad_input.cli
"""`python -m explorer.cli` in a subprocess with a private store, journal and temp dir."""

Cli = Callable[..., subprocess.CompletedProcess[str]]

HOSTILE = {
    "logged": "\x1b]0;PWNED\x07\x1b[2Jx",
    "unlogged": "\x9b2J\x9d0;C1\x9c",
    "temporary": "a\rb\x08\x7f\u202eevil",
}
"""quick-demo's variants → names that set the title, clear the screen, overwrite a line,
or reverse what follows (a 7-bit OSC and CSI, their 8-bit forms, CR, BS, DEL, RLO)."""

CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")
"""What must never be written: C0 but newline and tab (and CR but in a CSV's CR LF), DEL,
C1, bidi overrides."""


def assert_text_only(proc: subprocess.CompletedProcess[str], what: str) -> None:
    """The command succeeded and wrote nothing a terminal would obey."""
    assert proc.returncode == 0, (what, proc.stderr)
    for name, out in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        found = CONTROL.search(out)
        assert found is None, f"{what} {name}: {found.group()!r} in {out[:400]!r}"


def hostile_recording(tmp_path: Path) -> Path:
    """quick-demo with hostile variant names (profile, trials, events), title and a notice."""
    data = json.loads(gzip.decompress((recordings_dir() / "quick-demo.pgwx").read_bytes()))
    run = data["run"]
    named = [*run["profile"]["variants"], *run["trials"]]
    for event in data["events"]:
        named += [event, event.get("result", {})]
    for item in named:
        if item.get("variant") in HOSTILE or "knobs" in item:  # a trial, an event, a variant
            key = "name" if "knobs" in item else "variant"
            item[key] = HOSTILE[item[key]]
    run["profile"]["baseline"] = HOSTILE["logged"]
    data["run"]["profile"]["title"] = "title \x1b[31mred\x1b[0m"
    data["events"].insert(1, {"at": 0.0, "kind": "notice", "message": "note \x1b]2;T\x07"})
    return write_recording(data, tmp_path / "hostile.pgwx")


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
