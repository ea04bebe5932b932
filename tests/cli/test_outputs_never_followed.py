"""Files are written, never followed (issue 19 item 8).

`pgwx export --out` and `pgwx new` onto a symbolic link (to a file, or dangling) refuse with
one sentence and leave the link's target exactly as it was (content and mode), or absent; an
existing regular file is refused unless `--force`, which replaces it (never a link). Outputs
have the README's modes: recordings 0600, pgwx.log 0600 in a 0700 state directory.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from explorer import files
from explorer.files import write_new
from explorer.lab.store.replay import recordings_dir
from explorer.server.failures import log_traceback

"""`python -m explorer.cli` in a subprocess with a private store, journal and temp dir."""

Cli = Callable[..., subprocess.CompletedProcess[str]]


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def victim(tmp_path: Path) -> Path:
    """A file someone else cares about, 0644, that a link will point at."""
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    path.chmod(0o644)
    return path


def refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    """One sentence on stderr, exit 2 (assert_one_sentence's checks but the store's)."""
    err = proc.stderr.strip()
    assert proc.returncode == 2, proc
    assert err.startswith("pgwx: ") and len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


@pytest.fixture
def run_id(cli: Cli) -> str:
    """A stored run to export (the shipped quick-demo, imported)."""
    proc = cli("import", str(recordings_dir() / "quick-demo.pgwx"))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()[1]


def test_export_never_writes_through_a_link(cli: Cli, tmp_path: Path, run_id: str) -> None:
    target = victim(tmp_path)
    link = tmp_path / "link.pgwx"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.pgwx"
    dangling.symlink_to(tmp_path / "created-by-pgwx")
    for out in (link, dangling):
        for force in ([], ["--force"]):
            refused(cli("export", run_id, "--out", str(out), *force), "symbolic link")
    assert target.read_text() == "precious\n" and mode(target) == 0o644
    assert not (tmp_path / "created-by-pgwx").exists()
    assert link.is_symlink() and dangling.is_symlink()


def test_export_refuses_an_existing_file_unless_forced(
    cli: Cli, tmp_path: Path, run_id: str
) -> None:
    out = victim(tmp_path)
    refused(cli("export", run_id, "--out", str(out)), "exists already", "--force")
    assert out.read_text() == "precious\n"
    proc = cli("export", run_id, "--out", str(out), "--force")
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:2] == b"\x1f\x8b" and mode(out) == 0o600
    fresh = tmp_path / "fresh.pgwx"
    assert cli("export", run_id, "--out", str(fresh)).returncode == 0
    assert mode(fresh) == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temp left
    refused(cli("export", run_id, "--out", str(tmp_path)), "not a regular file")


def test_new_never_follows_a_link_nor_overwrites(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "mine.toml").symlink_to(tmp_path / "elsewhere.toml")  # dangling
    refused(cli("new", "mine"), "symbolic link")
    refused(cli("new", "mine", "--force"), "symbolic link")
    assert not (tmp_path / "elsewhere.toml").exists()
    target = victim(tmp_path)
    (tmp_path / "theirs.toml").symlink_to(target)
    refused(cli("new", "theirs", "--force"), "symbolic link")
    assert target.read_text() == "precious\n" and mode(target) == 0o644
    assert cli("new", "ours").returncode == 0
    assert mode(tmp_path / "ours.toml") == 0o644
    refused(cli("new", "ours"), "exists already")
    (tmp_path / "ours.toml").write_text("edited\n")
    assert cli("new", "ours", "--force").returncode == 0
    assert "workload" in (tmp_path / "ours.toml").read_text()


def test_the_log_is_private_and_never_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("PGWX_STATE_DIR", str(state))
    path = log_traceback(RuntimeError("boom"))
    assert path == state / "pgwx.log"
    assert mode(state) == 0o700 and mode(path) == 0o600
    assert "boom" in path.read_text()
    path.chmod(0o644)  # as an older pgwx left it
    log_traceback(RuntimeError("again"))
    assert mode(path) == 0o600 and "again" in path.read_text()
    path.unlink()
    target = victim(tmp_path)
    path.symlink_to(target)
    assert log_traceback(RuntimeError("through")) is None
    assert target.read_text() == "precious\n"


def test_a_name_taken_after_the_check_is_still_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first check passes (as if the file appeared just after it): the kernel still
    # refuses, because the temp file is given its name by link(), which never replaces.
    path = tmp_path / "out.md"
    path.write_text("theirs")
    real = files._check_target
    calls: list[Path] = []

    def first_passes(target: Path, force: bool) -> None:
        calls.append(target)
        if len(calls) > 1:
            real(target, force)

    monkeypatch.setattr(files, "_check_target", first_passes)
    with pytest.raises(files.FileRefused, match="exists already"):
        write_new(path, "ours")
    assert path.read_text() == "theirs"
    assert [p.name for p in tmp_path.iterdir()] == ["out.md"]  # no temp file left
    assert len(calls) == 2  # the second check only said what is there
