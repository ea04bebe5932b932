"""Profiles: TOML files, one per experiment, validated into `Profile` models.

Shipped profiles live in the repo's profiles/ (and profiles/examples/); the user's own are
found in the working directory (`*.toml` files with a top-level `workload =` key, so
pyproject.toml and friends are left alone) and in `$XDG_CONFIG_HOME/pgwx/profiles/`. A user
profile with a shipped one's name is used instead of it, and the list says so.
"""

from __future__ import annotations

import os
import pwd
import re
import stat
import tomllib
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from explorer.errors import PgwxError
from explorer.lab.profiles.tomlines import locate
from explorer.lab.workloads import KINDS, workload_class
from explorer.models import Profile
from explorer.paths import shipped_profiles_dir as profiles_dir
from explorer.paths import user_profiles_dir
from explorer.text import printable


class ProfileError(PgwxError, ValueError):
    """A profile cannot be used; str() names the file, the field and what is wrong."""


class ProfileShadowed(ProfileError):
    """A shipped profile hidden by a user profile of the same name (a note, not a fault)."""


PROFILE_KEY = re.compile(r"^\s*workload\s*=", re.M)
"""What makes a .toml in the working directory a pgwx profile."""


def is_profile_file(path: Path) -> bool:
    """A readable .toml with a top-level `workload =` line."""
    try:
        return path.suffix == ".toml" and bool(PROFILE_KEY.search(path.read_text()))
    except (OSError, UnicodeDecodeError):
        return False


def user_profile_paths() -> list[Path]:
    """The user's profiles: working directory first, then the config directory."""
    found = [p for p in sorted(Path.cwd().glob("*.toml")) if is_profile_file(p)]
    found += sorted(user_profiles_dir().glob("*.toml"))
    return found


def shipped_profile_paths() -> list[Path]:
    """The shipped experiments, then the shipped examples of your own load."""
    return sorted(profiles_dir().glob("*.toml")) + sorted(profiles_dir().glob("examples/*.toml"))


def profile_origin(path: Path) -> str:
    """Whose a listed profile is and where it lives, as a heading for `pgwx profiles`."""
    folder = path.resolve().parent
    if folder == profiles_dir().resolve():
        return f"Shipped experiments ({folder})"
    if folder == (profiles_dir() / "examples").resolve():
        return f"Shipped examples of your own load ({folder})"
    if folder == user_profiles_dir().resolve():
        return f"Yours, in your config directory ({folder})"
    return f"Yours, in the working directory ({folder})"


def find_profile(ref: str, notice: Callable[[str], None] | None = None) -> Path:
    """A path as given, or the name of a shipped profile.

    Args:
        ref: A file path, or a shipped profile's name.
        notice: Told, in one line, when a file in the working directory has the name of a
            shipped profile and is used instead of it, and when a name (not a path) picks a
            file in the working directory.
    """
    path = Path(ref)
    shipped = {p.stem: p for p in shipped_profile_paths()}
    stem = ref.removesuffix(".toml")
    if path.is_file():
        twin = shipped.get(path.stem)
        if notice is not None and twin is not None and path.resolve() != twin.resolve():
            notice(
                f"using the file {path.resolve()}, not the shipped profile {twin.stem} "
                f"(rename the file, or give {twin} to use the shipped one)"
            )
        return path
    for candidate in [*user_profile_paths(), *shipped.values()]:
        if candidate.stem == stem:
            twin = shipped.get(stem)
            if notice is not None and twin is not None and candidate != twin:
                # A user's file of a shipped profile's name runs instead of it: say so first.
                notice(
                    f"using {candidate}, not the shipped profile {stem} (rename that file, or "
                    f"give {twin} to use the shipped one)"
                )
            elif notice is not None and candidate.parent.resolve() == Path.cwd().resolve():
                # A cloned repository's *.toml is picked up by name: say so before it runs.
                notice(f"using ./{candidate.name} from the working directory")
            return candidate
    names = ", ".join(shipped)
    raise ProfileError(f"No profile {ref!r}: give a .toml path or one of: {names}.")


def _at(path: Path, text: str, loc: tuple[int | str, ...]) -> str:
    """`path:line` when the key's line can be found, else the path."""
    line = locate(text, loc)
    return f"{path}:{line}" if line else str(path)


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
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
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
        at = _at(path, text, err["loc"])
        raise ProfileError(f"{at}: field {_where(err['loc'])}: {err['msg']}.") from None
    if profile.workload not in KINDS:
        raise ProfileError(
            f"{path}: field workload: unknown kind {profile.workload!r}; use one "
            f"of {', '.join(KINDS)}."
        )
    try:
        # the parameters checked, no workload built: the run builds its one (RunRequest)
        workload_class(profile.workload).params_model.model_validate(profile.params)
    except ValidationError as exc:
        err = exc.errors()[0]
        at = _at(path, text, ("params", *err["loc"]))
        raise ProfileError(f"{at}: field params.{_where(err['loc'])}: {err['msg']}.") from None
    names = [v.name for v in profile.variants]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ProfileError(f"{path}: field variants: the name {dupes[0]!r} is used twice.")
    if profile.baseline and profile.baseline not in names:
        raise ProfileError(f"{path}: field baseline: {profile.baseline!r} is not a variant.")
    prepare = profile.params.get("prepare")
    if isinstance(prepare, dict) and isinstance(prepare.get("file"), str):
        # A data file is named relative to its profile, wherever pgwx is started from.
        given = prepare["file"]
        prepare["file"] = str((path.parent / given).resolve())
        why = outside_reach(Path(prepare["file"]), path.parent)
        if why:
            at = _at(path, text, ("params", "prepare", "file"))
            raise ProfileError(f"{at}: field params.prepare.file: {printable(given)!r} {why}.")
    return profile


def outside_reach(resolved: Path, folder: Path) -> str | None:
    """Why a profile may not have pgwx read `resolved` (links already followed), or None.

    Only files under the profile's folder or the working directory are read — a link out of
    them, `/etc/shadow` or `~/.ssh/id_ed25519` are not — and, when pgwx runs as root through
    sudo, only files the user who ran sudo could read.
    """
    roots = [folder.resolve(), Path.cwd().resolve()]
    if not any(resolved.is_relative_to(root) for root in roots):
        return (
            f"is outside the profile's folder {roots[0]} and the working directory {roots[1]} "
            "(links followed); pgwx reads a data file only from those"
        )
    if os.geteuid() == 0 and os.environ.get("SUDO_UID", "").isdigit():
        if not _readable_by(resolved, int(os.environ["SUDO_UID"])):
            return (
                "is not readable by the user who ran sudo; pgwx reads no file for a profile "
                "that user could not"
            )
    return None


def _readable_by(path: Path, uid: int) -> bool:
    """Whether user `uid` could read `path` by its mode bits (owner, groups, others)."""
    try:
        st = path.stat()
        entry = pwd.getpwuid(uid)
        groups = set(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except (OSError, KeyError):
        return False
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IRUSR)
    if st.st_gid in groups:
        return bool(st.st_mode & stat.S_IRGRP)
    return bool(st.st_mode & stat.S_IROTH)


def list_profiles() -> list[tuple[Path, Profile | ProfileError]]:
    """Every profile (the user's, then the shipped ones), or the error that keeps it from loading.

    A shipped profile hidden by a user profile of the same name is listed as `ProfileShadowed`.
    """
    out: list[tuple[Path, Profile | ProfileError]] = []
    seen: dict[str, Path] = {}
    for path in [*user_profile_paths(), *shipped_profile_paths()]:
        if path.stem in seen:
            out.append(
                (
                    path,
                    ProfileShadowed(
                        f"{path} is hidden by your {seen[path.stem]} of the same name, which "
                        "is used instead; rename yours to see both."
                    ),
                )
            )
            continue
        seen[path.stem] = path
        try:
            out.append((path, load_profile(path)))
        except ProfileError as exc:
            out.append((path, exc))
    return out
