"""`printable` is the one place control characters become text; exports go through it (issue 19).

The markdown and CSV tables, the cross-run comparison and the stored run itself hold no
control character from a name, a reason or a note, whichever way the text came in: read from
a recording, typed in a profile, or set on a result after it was made.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from explorer.analysis import crossrun
from explorer.analysis.report import to_csv, to_json, to_markdown
from explorer.lab.store.recording import read_recording
from explorer.models import Notice, Variant
from explorer.text import CONTROL, printable
from tests.support.hostile import HOSTILE, hostile_recording


def test_every_control_character_is_escaped_and_nothing_else() -> None:
    controls = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))]
    controls = [c for c in controls if c not in "\n\t"]
    controls += ["\u202e", "\u2066", "\u2028"]
    for char in controls:
        out = printable(f"a{char}b")
        assert CONTROL.search(out) is None and out.startswith("a\\") and out.endswith("b"), out
        assert printable(out) == out  # idempotent: a stored name does not grow on each load
    plain = "naïve café ≈ 3× — 日本\ttab\nline | [b]markup[/b]"
    assert printable(plain) == plain


def test_models_hold_names_and_messages_as_text() -> None:
    assert Variant(name="x\x1b[2J").name == "x\\x1b[2J"
    assert Notice(message="\x9d0;t\x9c").message == "\\x9d0;t\\x9c"


def test_markdown_csv_json_and_compare_hold_no_control_character(tmp_path: Path) -> None:
    record = read_recording(hostile_recording(tmp_path)).run
    trial = record.trials[0]
    # set after validation, the way a runner fills a failed trial in
    trial.status = "failed"
    trial.reason = "server said \x1b]0;owned\x07"
    trial.phases[0].detail["note"] = "\x1b[2J"
    outputs = {
        "md": to_markdown(record),
        "csv": to_csv(record),
        "json": to_json(record),
        "compare md": crossrun.to_markdown(crossrun.compare_runs(record, record)),
        "compare json": crossrun.to_json(crossrun.compare_runs(record, record)),
    }
    for what, text in outputs.items():
        found = CONTROL.search(text)
        assert found is None, f"{what}: {found.group()!r}"
    cells = [cell for row in csv.reader(io.StringIO(outputs["csv"])) for cell in row]
    assert printable(HOSTILE["logged"]) in cells
    assert printable(HOSTILE["logged"]).replace("\\", "\\\\") in outputs["md"]
