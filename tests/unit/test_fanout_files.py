"""The fan-out files kept in the repository — a Kubernetes Job and a GitHub Actions matrix —
are valid YAML of the expected shape, keep secrets out of command lines, and run `pgwx` only
with commands and flags it accepts (each command line is parsed by pgwx's own parser).

YAML is read with ruamel.yaml, named in the test extra: apache-otava (also there) pins it
already, so checking these files adds no package.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from explorer import cli
from tests.support.paths import ROOT

JOB = ROOT / "deploy" / "kubernetes" / "pgwx-job.yaml"
MATRIX = ROOT / "deploy" / "github" / "pgwx-matrix.yml"

PLACEHOLDERS = re.compile(r"\$\{\{[^}]*\}\}|\$\([^)]*\)|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")
"""GitHub's ${{ … }}, a shell's $(…), $VAR and ${VAR}: replaced by a value before parsing."""

SHELL_ENDS = {";", "||", "&&", "|", ">", ">>", "2>", "<"}


def _load(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def pgwx_commands(script: str) -> list[list[str]]:
    """Every `pgwx …` command in a shell script, as argv after `pgwx` (placeholders filled)."""
    out = []
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(PLACEHOLDERS.sub("18", line), posix=True)
        # `a;` and `x||` glued to a word: split the shell's operators off
        tokens = [t for w in words for t in re.split(r"(;|\|\||&&)", w) if t]
        for i, word in enumerate(tokens):
            # `pgwx` as a command: first on the line or after an operator (not `pip install pgwx`)
            if word == "pgwx" and (i == 0 or tokens[i - 1] in SHELL_ENDS):
                argv = []
                for t in tokens[i + 1 :]:
                    if t in SHELL_ENDS:
                        break
                    argv.append(t)
                out.append(argv)
    return out


def assert_pgwx_accepts(argv: list[str]) -> argparse.Namespace:
    """pgwx's own parser takes the command: no unknown command, flag or choice."""
    try:
        args = cli.parse_args(argv)
    except SystemExit as exc:  # argparse's way of refusing
        raise AssertionError(f"pgwx refuses `pgwx {shlex.join(argv)}`") from exc
    assert args.command is not None, argv
    return args


def test_the_checker_catches_a_flag_pgwx_does_not_have() -> None:
    (argv,) = pgwx_commands('pgwx run table-kind --format json --no-such-flag; echo "$?"')
    with pytest.raises(AssertionError, match="refuses"):
        assert_pgwx_accepts(argv)
    (argv,) = pgwx_commands("x || pgwx runs && true")
    assert argv == ["runs"]


def test_the_kubernetes_job_runs_pgwx_with_the_secret_by_environment() -> None:
    job = _load(JOB)
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    spec = job["spec"]["template"]["spec"]
    assert spec["restartPolicy"] == "Never" and job["spec"]["backoffLimit"] == 0
    (container,) = spec["containers"]
    assert container["image"]
    env = {e["name"]: e for e in container["env"]}
    # the password comes from the cluster's secret, by environment; no literal secret anywhere
    assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "password"
    assert all("value" not in e or "password" not in e["name"].lower() for e in env.values())
    script = " ".join(container["args"])
    assert "PGPASSWORD" not in script and "secret" not in script.lower()
    commands = pgwx_commands(script)
    assert len(commands) == 1
    args = assert_pgwx_accepts(commands[0])
    assert (args.command, args.format, args.fail_on) == ("run", "json", "slower")
    assert args.results  # the team's store, from the environment


def test_the_github_matrix_fans_out_profiles_each_job_taking_every_server() -> None:
    flow = _load(MATRIX)
    (job,) = flow["jobs"].values()
    profiles = job["strategy"]["matrix"]["profile"]
    assert profiles and job["strategy"]["fail-fast"] is False
    scripts = [step["run"] for step in job["steps"] if "run" in step]
    commands = [argv for script in scripts for argv in pgwx_commands(script)]
    parsed = [assert_pgwx_accepts(argv) for argv in commands]
    assert [a.command for a in parsed] == ["run", "report", "history"]
    assert all(a.results for a in parsed)  # every command reads and writes the team's store
    # one job takes every server: a version verdict judged within one run
    assert len(parsed[0].servers) == 2 and parsed[1].format == "bmf"
    # secrets only by environment, never written into a command
    assert all("secrets." not in script for script in scripts)
    for profile in profiles:
        assert (ROOT / "profiles" / f"{profile}.toml").exists()
