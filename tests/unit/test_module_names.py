"""One module per name under explorer/: two `results.py` in different rooms made a reader
(and a traceback) ambiguous, so a second module of a name already taken fails here."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

EXPLORER = Path(__file__).resolve().parents[2] / "explorer"
PACKAGE_FILES = {"__init__.py", "__main__.py"}


def repeated(root: Path) -> list[str]:
    """The file names of modules under root that exist more than once."""
    names = Counter(p.name for p in root.rglob("*.py") if p.name not in PACKAGE_FILES)
    return sorted(name for name, count in names.items() if count > 1)


def test_no_two_modules_under_explorer_share_a_name() -> None:
    assert repeated(EXPLORER) == []


def test_a_repeated_name_is_caught(tmp_path: Path) -> None:
    for room in ("store", "widgets"):
        (tmp_path / room).mkdir()
        (tmp_path / room / "results.py").write_text("")
        (tmp_path / room / "__init__.py").write_text("")
    assert repeated(tmp_path) == ["results.py"]
