"""Hostile names: variant names that would set a terminal's title, clear its screen or
reverse its text, what must never be written, and a shipped recording renamed with them."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from explorer.lab.store.recording import write_recording
from explorer.lab.store.replay import recordings_dir

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


SPLIT_CASES = [
    ("SELECT E'\\''; COPY t TO PROGRAM 'x'; SELECT 'y'",
     ["SELECT E'\\''", "COPY t TO PROGRAM 'x'", "SELECT 'y'"]),
    ("SELECT e'a\\\\'; SELECT 2", ["SELECT e'a\\\\'", "SELECT 2"]),
    ("SELECT 'a\\'; SELECT 2", ["SELECT 'a\\'", "SELECT 2"]),
    ("SELECT E'a'\n'\\''; SELECT 2", ["SELECT E'a'\n'\\''", "SELECT 2"]),
    ("SELECT 1 AS a$b$; COPY t; SELECT $b$", ["SELECT 1 AS a$b$", "COPY t", "SELECT $b$"]),
    ("SELECT $b$;$b$; SELECT 2", ["SELECT $b$;$b$", "SELECT 2"]),
    ("/* /* */ ; */ SELECT 1; SELECT 2", ["/* /* */ ; */ SELECT 1", "SELECT 2"]),
    ('SELECT 1 AS "a;""b"; SELECT 2', ['SELECT 1 AS "a;""b"', "SELECT 2"]),
    ("SELECT U&'d\\0061t\\+000061'; SELECT 2", ["SELECT U&'d\\0061t\\+000061'", "SELECT 2"]),
    ("SELECT 1 -- ; no\n; ;; SELECT 2", ["SELECT 1 -- ; no", "SELECT 2"]),
    ("SELECT xe'a'; SELECT 2", ["SELECT xe'a'", "SELECT 2"]),
]  # fmt: skip
"""(script, the statements PostgreSQL's lexer cuts it into): strings, escape strings and
their continuations, dollar quotes and names with $, nested comments (issue 34)."""
