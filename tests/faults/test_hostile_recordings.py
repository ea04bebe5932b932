"""A `.pgwx` file is data of bounded size, read as an attacker could have written it (issue 19).

Every hostile file — a gzip bomb, a link to /dev/zero, a FIFO, two million events, each crafted
value — ends `pgwx import` and `pgwx replay --headless` with one sentence and exit 2, in bounded
time and memory, and nothing is stored. The bomb's time and peak memory are measured in a
fresh process that runs pgwx as its only child (RUSAGE_CHILDREN of that process is pgwx's).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from explorer.lab.store.bounds import MAX_EVENTS
from explorer.lab.store.recording import EVENTS_KEY, write_recording
from explorer.lab.store.replay import recordings_dir
from tests.support.cli import assert_one_sentence
from tests.support.paths import ROOT

"""`python -m explorer.cli` in a subprocess with a private store, journal and temp dir."""

Cli = Callable[..., subprocess.CompletedProcess[str]]


def shipped() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The quick-demo recording as (everything but the events, the events)."""
    data = json.loads(gzip.decompress((recordings_dir() / "quick-demo.pgwx").read_bytes()))
    events = data.pop("events")
    return data, events


DEEP = "@deep@"
"""Stands for JSON nested 100,000 deep (which json.dumps itself cannot write)."""
DEEP_300 = "@deep-300@"
"""Stands for JSON nested 300 deep: json.loads takes it, the store could not write it back."""


def write(path: Path, head: dict[str, Any], events: list[dict[str, Any]]) -> Path:
    """A recording laid out as pgwx lays it out (so only the crafted value is wrong)."""
    write_recording({**head, "events": events}, path)
    text = gzip.decompress(path.read_bytes())
    for marker, levels in ((DEEP, 100_000), (DEEP_300, 300)):
        deep = b"[" * levels + b"0" + b"]" * levels
        text = text.replace(json.dumps(marker).encode(), deep)
    path.write_bytes(gzip.compress(text))
    return path


def refused_everywhere(cli: Cli, tmp_path: Path, path: Path, *words: str) -> str:
    """`import` and `replay --headless` (at 16× speed) each end with the same one sentence."""
    first = None
    for args in (["import", str(path)], ["replay", str(path), "--headless", "--speed", "16"]):
        proc = cli(*args)
        assert_one_sentence(proc, tmp_path, *words)
        assert "internal error" not in proc.stderr
        first = first or proc.stderr
        assert proc.stderr == first  # the same sentence from both commands
    return first or ""


def measured(tmp_path: Path, *args: str) -> tuple[float, int, subprocess.CompletedProcess[str]]:
    """(seconds, peak RSS in bytes, result) of `pgwx ARGS` run as the only child of a fresh
    process, which measures it (so no earlier child of the test session counts)."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.monotonic()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(time.monotonic() - t, peak, p.returncode)\n"
        "print(p.stderr, end='')\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PGWX_RESULTS": str(tmp_path / "results.sqlite"),
        "PGWX_STATE_DIR": str(tmp_path / "state"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "explorer.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    first, _, stderr = proc.stdout.partition("\n")
    seconds, peak_kib, code = first.split()
    child = subprocess.CompletedProcess(args, int(code), "", stderr)
    return float(seconds), int(peak_kib) * 1024, child


# --------------------------------------------------------------------------- sizes, kinds


def test_a_gzip_bomb_is_refused_in_seconds_and_little_memory(tmp_path: Path, cli: Cli) -> None:
    # 4 MB that inflate to 4 GiB of zeros without a newline: 4096 gzip members of 1 MiB each
    # (a reader takes them as one stream), built here, never kept in the repository.
    member = gzip.compress(b"\0" * (1 << 20), compresslevel=9, mtime=0)
    bomb = tmp_path / "bomb.pgwx"
    with bomb.open("wb") as out:
        for _ in range(4096):
            out.write(member)
    assert bomb.stat().st_size < 5 << 20
    for args in (["import", str(bomb)], ["replay", str(bomb), "--headless"]):
        seconds, peak, proc = measured(tmp_path, *args)
        assert_one_sentence(proc, tmp_path, "longer than")
        assert seconds < 5, f"{args[0]}: {seconds:.1f} s"
        assert peak < 200 << 20, f"{args[0]}: peak {peak >> 20} MiB"


def test_a_link_to_dev_zero_and_a_fifo_are_not_read(tmp_path: Path, cli: Cli) -> None:
    zero = tmp_path / "zero.pgwx"
    zero.symlink_to("/dev/zero")
    refused_everywhere(cli, tmp_path, zero, "not a regular file")
    fifo = tmp_path / "fifo.pgwx"
    os.mkfifo(fifo)  # nobody ever writes to it: a read would wait forever (cli times out)
    refused_everywhere(cli, tmp_path, fifo, "not a regular file")
    folder = tmp_path / "folder.pgwx"
    folder.mkdir()
    assert_one_sentence(cli("import", str(folder)), tmp_path, "not a regular file")


def test_two_million_events_are_refused_before_any_is_kept(tmp_path: Path, cli: Cli) -> None:
    head, _events = shipped()
    line = b'{"at":1.0,"kind":"notice","message":"x"},\n'
    first = json.dumps(head, separators=(",", ":"))[:-1].encode() + EVENTS_KEY + b"\n"
    many = tmp_path / "many.pgwx"
    with gzip.open(many, "wb", compresslevel=1) as out:
        out.write(first)
        for _ in range(2_000_000 // 10_000):
            out.write(line * 10_000)
        out.write(b'{"at":1.0,"kind":"notice","message":"x"}\n]}\n')
    assert many.stat().st_size < 2 << 20
    seconds, peak, proc = measured(tmp_path, "import", str(many))
    assert_one_sentence(proc, tmp_path, f"more than {MAX_EVENTS:,} events")
    assert seconds < 30, f"{seconds:.1f} s"  # the issue measured 29 s and 1.6 GB
    assert peak < 200 << 20, f"peak {peak >> 20} MiB"


def test_a_recording_inflating_past_its_ceiling_is_refused_before_any_event_is_read(
    tmp_path: Path, cli: Cli
) -> None:
    """Lines and events each within their ceilings, 2.3 GiB in all: the inflated bytes are
    counted, and the file refused on them (issue 40, promise 6). The lines are no events pgwx
    knows, so a reader that did not count would go on to decode them and fail on another
    sentence, after reading everything once, instead of holding gigabytes of events."""
    head, _events = shipped()
    first = json.dumps(head, separators=(",", ":"))[:-1].encode() + EVENTS_KEY + b"\n"
    line = b'{"at":1.0,"kind":"nonesuch","message":"' + b"x" * 1_000_000 + b'"},\n'
    member = gzip.compress(line * 64, compresslevel=9, mtime=0)  # 64 MB, a few kB packed
    big = tmp_path / "big.pgwx"
    with big.open("wb") as out:  # gzip members one after the other read as one stream
        out.write(gzip.compress(first, mtime=0))
        for _ in range(36):
            out.write(member)
        out.write(gzip.compress(b'{"at":1.0,"kind":"notice","message":"x"}\n]}\n', mtime=0))
    assert big.stat().st_size < 5 << 20
    _seconds, peak, proc = measured(tmp_path, "import", str(big))
    assert_one_sentence(proc, tmp_path, "inflates to more than 2.0 GiB")
    assert peak < 200 << 20, f"peak {peak >> 20} MiB"


# --------------------------------------------------------------------------- crafted values


def _time(n: int, value: Any) -> Callable[[dict[str, Any], list[dict[str, Any]]], None]:
    def craft(_head: dict[str, Any], events: list[dict[str, Any]]) -> None:
        events[n]["at"] = value

    return craft


def _deep(head: dict[str, Any], _events: list[dict[str, Any]]) -> None:
    head["environment"] = {"nested": DEEP}


def _deep_params(head: dict[str, Any], _events: list[dict[str, Any]]) -> None:
    head["run"]["profile"]["params"]["deep"] = DEEP_300  # was an internal error on import


def _deep_event(_head: dict[str, Any], events: list[dict[str, Any]]) -> None:
    sample = next(e for e in events if e["kind"] == "sample")
    sample["sample"]["deep"] = DEEP


def _run_id(value: str) -> Callable[[dict[str, Any], list[dict[str, Any]]], None]:
    def craft(head: dict[str, Any], events: list[dict[str, Any]]) -> None:
        # consistent everywhere, so only the format is wrong
        old = head["run"]["id"]
        head["run"]["id"] = value
        for trial in head["run"]["trials"]:
            trial["run_id"] = value
        for event in events:
            if event.get("run_id") == old:
                event["run_id"] = value
            if event["kind"] == "trial-ended":
                event["result"]["run_id"] = value

    return craft


def _set(key: str, value: Any) -> Callable[[dict[str, Any], list[dict[str, Any]]], None]:
    def craft(head: dict[str, Any], _events: list[dict[str, Any]]) -> None:
        if key == "version":
            head["version"] = value
        else:
            head["run"][key] = value

    return craft


def _other_run(_head: dict[str, Any], events: list[dict[str, Any]]) -> None:
    started = next(e for e in events if e["kind"] == "run-started")
    started["run_id"] = "20250101-000000-abcdef"


def _out_of_order(_head: dict[str, Any], events: list[dict[str, Any]]) -> None:
    events[-1]["at"] = 0.0  # the run ended 20 s before it did


def _unknown_variant(_head: dict[str, Any], events: list[dict[str, Any]]) -> None:
    trial = next(e for e in events if e["kind"] == "trial-started")
    trial["variant"] = "not-in-the-profile"


CRAFTED = {
    "time 1e308": (_time(5, 1e308), "event time"),
    "time Infinity": (_time(5, float("inf")), "event time"),
    "time NaN": (_time(5, float("nan")), "event time"),
    "time negative": (_time(5, -1.0), "event time"),
    "out of order": (_out_of_order, "out of order"),
    "deep nesting (head)": (_deep, "nested more than"),
    "deep nesting (params, 300)": (_deep_params, "nested more than"),
    "deep nesting (event)": (_deep_event, "damaged content"),
    "version -1": (_set("version", -1), "format -1"),
    "version 1.5": (_set("version", 1.5), "format 1.5"),
    "scale NaN": (_set("scale", float("nan")), "scale"),
    "scale negative": (_set("scale", -2.0), "scale"),
    "run id mismatch": (_other_run, "another run"),
    "run id %": (_run_id("%"), "run id"),
    "run id of 100,000 characters": (_run_id("7" * 100_000), "run id"),
    "variant not in the profile": (_unknown_variant, "variant"),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_each_crafted_value_is_one_sentence(case: str, tmp_path: Path, cli: Cli) -> None:
    craft, words = CRAFTED[case]
    head, events = shipped()
    craft(head, events)
    path = write(tmp_path / "crafted.pgwx", head, events)
    refused_everywhere(cli, tmp_path, path, words)


def test_the_untouched_recording_still_imports(tmp_path: Path, cli: Cli) -> None:
    # The control case: the same writer and the same commands accept what pgwx wrote.
    head, events = shipped()
    path = write(tmp_path / "fine.pgwx", head, events)
    proc = cli("import", str(path))
    assert proc.returncode == 0, proc.stderr
    assert cli("replay", str(path), "--headless").returncode == 0


def test_replay_of_a_file_that_is_no_recording_says_what_import_says(
    tmp_path: Path, cli: Cli
) -> None:
    for name, content in (
        ("notes.txt", b"hello, not json\n"),
        ("data.json", b'{"some": "json"}'),
        ("list.json", b"[1, 2, 3]"),
    ):
        path = tmp_path / name
        path.write_bytes(content)
        sentence = refused_everywhere(cli, tmp_path, path, "is not a pgwx recording")
        assert "pgwx export RUN --out" in sentence
