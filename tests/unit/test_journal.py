"""The undo journal read entry by entry (issue 20): what pgwx could not have written is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.lab.safety.journal import Journal, JournalUnreadable, JournalUnusable


def test_a_state_dir_under_a_file_is_named_not_taken_for_changed_settings(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    with pytest.raises(JournalUnusable) as err:
        Journal("123", tmp_path / "afile" / "state").load()
    assert "may still be changed" not in str(err.value)
    assert "PGWX_STATE_DIR" in str(err.value) and str(tmp_path / "afile") in str(err.value)


def test_foreign_names_and_values_that_are_not_text_are_sorted_out(tmp_path: Path) -> None:
    journal = Journal("123", tmp_path)
    entries = {
        "synchronous_commit": {"auto": None, "set": "off"},
        "work_mem": {"auto": None, "set": "64MB"},
        "fsync": 5,
        "full_page_writes": {"auto": 0},
        "evil\x1b[2J": {"auto": None},
    }
    journal.path.write_text(json.dumps(entries))
    with pytest.raises(JournalUnreadable) as err:
        journal.load()
    text = str(err.value)
    assert "work_mem" in text and "fsync" in text and "\x1b" not in text
    good, bad = journal.sort_out()
    assert good == {"synchronous_commit": {"auto": None, "set": "off"}}
    assert set(bad) == {"work_mem", "fsync", "full_page_writes", "evil\x1b[2J"}
    assert bad["work_mem"] == "a setting pgwx never changes: left as it is"
