"""Profiles: TOML files, one per experiment, validated into `Profile` models."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from explorer.errors import PgwxError
from explorer.lab.workloads import KINDS, build_workload
from explorer.models import Profile


class ProfileError(PgwxError, ValueError):
    """A profile cannot be used; str() names the file, the field and what is wrong."""


def profiles_dir() -> Path:
    """The profiles shipped with pgwx (the repo's profiles/, or the wheel's copy)."""
    here = Path(__file__).resolve().parents[2] / "profiles"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[1] / "_profiles"


def find_profile(ref: str, notice: Callable[[str], None] | None = None) -> Path:
    """A path as given, or the name of a shipped profile.

    Args:
        ref: A file path, or a shipped profile's name.
        notice: Told, in one line, when a file in the working directory has the name of a
            shipped profile and is used instead of it.
    """
    path = Path(ref)
    shipped = profiles_dir() / f"{ref.removesuffix('.toml')}.toml"
    if path.is_file():
        if notice is not None and shipped.is_file() and path.resolve() != shipped.resolve():
            notice(
                f"using the file {path.resolve()}, not the shipped profile {shipped.stem} "
                f"(rename the file, or give {shipped} to use the shipped one)"
            )
        return path
    if shipped.is_file():
        return shipped
    names = ", ".join(p.stem for p in sorted(profiles_dir().glob("*.toml")))
    raise ProfileError(f"No profile {ref!r}: give a .toml path or one of: {names}.")


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def load_profile(ref: str | Path, notice: Callable[[str], None] | None = None) -> Profile:
    """Read, parse and validate one profile, workload parameters included.

    Args:
        ref: A file path, or a shipped profile's name.
        notice: Told when a local file shadows a shipped profile (see `find_profile`).
    """
    path = find_profile(str(ref), notice)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ProfileError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start}); save it as UTF-8."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML ({exc}).") from None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot be read ({exc.strerror}).") from None
    data.setdefault("name", path.stem)
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ProfileError(f"{path}: field {_where(err['loc'])}: {err['msg']}.") from None
    if profile.workload not in KINDS:
        raise ProfileError(
            f"{path}: field workload: unknown kind {profile.workload!r}; use one "
            f"of {', '.join(KINDS)}."
        )
    try:
        build_workload(profile)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ProfileError(f"{path}: field params.{_where(err['loc'])}: {err['msg']}.") from None
    names = [v.name for v in profile.variants]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ProfileError(f"{path}: field variants: the name {dupes[0]!r} is used twice.")
    if profile.baseline and profile.baseline not in names:
        raise ProfileError(f"{path}: field baseline: {profile.baseline!r} is not a variant.")
    return profile


def list_profiles() -> list[tuple[Path, Profile | ProfileError]]:
    """Every shipped profile, or the error that keeps it from loading."""
    out: list[tuple[Path, Profile | ProfileError]] = []
    for path in sorted(profiles_dir().glob("*.toml")):
        try:
            out.append((path, load_profile(path)))
        except ProfileError as exc:
            out.append((path, exc))
    return out
