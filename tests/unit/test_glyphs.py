"""ASCII mode has a stand-in for every mark pgwx's own text can put on the screen (issue 39:
`--ascii` drew the phase separator `›` as `?`)."""

from __future__ import annotations

import ast
from pathlib import Path

from explorer.text import CONTROL
from explorer.tui.glyphs import TRANSLATE
from explorer.tui.widgets.duration import phase_strip
from tests.support.paths import ROOT


def _marks_in_strings() -> dict[str, str]:
    """Each non-ASCII character in a string constant of explorer/ (docstrings aside), with
    where it was first seen."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "explorer").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) in docstrings:
                    continue
                for char in node.value:
                    if ord(char) > 127:
                        found.setdefault(char, f"{Path(path).relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_mark_in_pgwx_text_has_an_ascii_stand_in() -> None:
    missing = {
        char: where
        for char, where in _marks_in_strings().items()
        if ord(char) not in TRANSLATE and not CONTROL.match(char)
    }
    assert not missing, missing


def test_the_phase_separator_is_ascii_in_ascii_mode() -> None:
    # What the app's ASCII line filter makes of the duration pane's phase strip.
    shown = phase_strip([("load", 1.2), ("commit", None)], "commit").plain.translate(TRANSLATE)
    assert shown.isascii(), shown
    assert "load 1.20 s > " in shown or " > " in shown, shown
