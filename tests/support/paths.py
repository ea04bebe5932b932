"""Where the tests find the checkout and its recorded fixtures, whichever room a test is in."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: the folder holding explorer/, profiles/ and tests/."""

FIXTURES = ROOT / "tests" / "fixtures"
"""Recorded runs and their recorder (tests/fixtures/record.py)."""

DURABILITY = FIXTURES / "durability.json"
"""The recorded durability run most serverless tests replay."""

EXAMPLES = ROOT / "profiles" / "examples"
"""The example profiles shipped with pgwx."""
