"""Everything the command line writes passes through the control-character escaping (issue 40,
promise 4), including text no model escaped first: an argument echoed back, a path, the
server's or the network's own sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import cli
from explorer.text import CONTROL

TITLE = "\x1b]0;PWNED\x07\x1b[2J"
"""Set the terminal's title, clear the screen."""
SHOWN = "\\x1b]0;PWNED\\x07\\x1b[2J"


@pytest.mark.parametrize(
    ("argv", "stream", "code"),
    [
        (["history", f"demo{TITLE}"], "out", 0),  # the profile asked for, echoed on stdout
        (["import", f"/nonexistent/{TITLE}.pgwx"], "err", 2),  # a path in an error
        (["restore", "--dsn", f"postgresql://nobody@127.0.0.1:9/x{TITLE}"], "err", 2),
    ],
    ids=["stdout", "stderr", "connection-error"],
)
def test_the_command_line_writes_control_characters_as_text(
    argv: list[str],
    stream: str,
    code: int,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "results.sqlite"))
    assert cli.main(argv) == code
    out, err = capsys.readouterr()
    assert SHOWN in (out if stream == "out" else err), (out, err)
    for written in (out, err):
        assert CONTROL.search(written) is None, written
