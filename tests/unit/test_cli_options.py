"""Options before or after the subcommand mean the same; sizes are bounded before any run."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import cli
from explorer.errors import UsageError
from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.limits import MAX_ROWS, check_sizes
from explorer.models import Profile, Variant
from tests.support.cli import private_store

# --------------------------------------------------------------------------- option placement

SERVER_OPTIONS = [
    (["--dsn", "postgresql://me@db/app"], "dsn", "postgresql://me@db/app"),
    (["--data-dir", "/srv/pgwx"], "data_dir", Path("/srv/pgwx")),
    (["--keep-server"], "keep_server", True),
    (["--allow-risky"], "allow_risky", True),
]


@pytest.mark.parametrize(("option", "dest", "value"), SERVER_OPTIONS)
@pytest.mark.parametrize("before", [True, False], ids=["before-run", "after-run"])
def test_server_options_count_before_and_after_the_subcommand(
    option: list[str], dest: str, value: object, before: bool
) -> None:
    argv = [*option, "run", "quick-demo"] if before else ["run", "quick-demo", *option]
    args = cli.parse_args(argv)
    assert getattr(args, dest) == value


@pytest.mark.parametrize("before", [True, False], ids=["before-server", "after-server"])
def test_data_dir_counts_for_the_server_command(before: bool) -> None:
    argv = ["--data-dir", "/x", "server", "status"]
    if not before:
        argv = ["server", "status", "--data-dir", "/x"]
    assert cli.parse_args(argv).data_dir == Path("/x")


def test_defaults_survive_without_the_options() -> None:
    args = cli.parse_args(["run", "quick-demo"])
    assert (args.dsn, args.data_dir, args.keep_server, args.allow_risky) == (
        None,
        None,
        False,
        False,
    )


def test_dsn_before_run_is_the_server_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    private_store(monkeypatch, tmp_path)
    # PGHOST names another place: the run must go where --dsn says, not there.
    monkeypatch.setenv("PGHOST", str(tmp_path / "from-pghost"))
    dsn = f"postgresql://u@/db?host={tmp_path}/from-dsn"
    assert cli.main(["--dsn", dsn, "run", "quick-demo", "--scale", "0.005"]) == 2
    err = capsys.readouterr().err
    assert "from-dsn" in err and "from-pghost" not in err, err


# --------------------------------------------------------------------------- size bounds


def test_sizes_within_bounds_give_the_estimate() -> None:
    profile = load_profile("durability")
    estimate = check_sizes(profile, scale=0.5, repeats=2, settle=0, variants=3)
    assert estimate.rows == 500_000 and estimate.trials == 6
    assert not estimate.large and not estimate.over_ceiling
    assert "500,000 rows" in estimate.describe() and "6 trials" in estimate.describe()


def test_the_ceiling_needs_the_explicit_flag() -> None:
    profile = load_profile("durability")
    scale = (MAX_ROWS + 1) / 1_000_000
    with pytest.raises(UsageError, match="--allow-large"):
        check_sizes(profile, scale=scale)
    estimate = check_sizes(profile, scale=scale, allow_large=True)
    assert estimate.over_ceiling and estimate.large


def test_bytes_count_too() -> None:
    # 16 KB rows: fewer rows than the row ceiling, but over 20 GiB.
    profile = Profile(
        name="big-toast",
        title="t",
        workload="toast",
        params={"rows": 2_000_000},
        variants=[Variant(name="a")],
    )
    with pytest.raises(UsageError, match="GiB"):
        check_sizes(profile)


def test_repeats_mode_other_than_a_number_is_left_to_its_resolver() -> None:
    # Another option ("auto") resolves repeats later; the bounds apply to numbers only.
    assert check_sizes(load_profile("quick-demo"), repeats="auto").trials > 0


def test_a_large_run_shows_its_estimate_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    private_store(monkeypatch, tmp_path)
    dsn = f"postgresql://u@/db?host={tmp_path}/nosock"  # fails right after the estimate
    argv = ["run", "durability", "--scale", "10", "--dsn", dsn]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "about 10,000,000 rows" in err.splitlines()[0], err
