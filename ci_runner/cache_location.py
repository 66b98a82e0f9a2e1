"""Where the runner's caches (the parse cache, the import-facts cache) live, and what happens
when no place can be found.

``$CI_RUNNER_CACHE_DIR``, else ``$XDG_CACHE_HOME/ci-runner`` (an absolute path, as the XDG spec
requires), else ``<home>/.cache/ci-runner`` where the home is ``$HOME`` or the user's passwd
entry. A container run as a uid with no passwd entry and no ``HOME`` has none of these: the
caches are then off, one notice on stderr says so and why, and every command works without
them (a cache only ever saves time).
"""

from __future__ import annotations

import json
import os
import pwd
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_runner.safe_text import one_line

CACHE_DIR_VARIABLE = "CI_RUNNER_CACHE_DIR"
SUBDIRECTORY = "ci-runner"

_announced: set[str] = set()  # reasons already printed by this process


@dataclass(frozen=True)
class CacheLocation:
    """The cache directory, or None with the reason there is none."""

    directory: Path | None
    reason: str = ""


def _home(env: Mapping[str, str]) -> tuple[str | None, str]:
    """The home directory (an absolute path) as :func:`os.path.expanduser` finds it, or None
    with why not."""
    home = env.get("HOME")
    if home is not None:
        if os.path.isabs(home):
            return home, ""
        return None, f"HOME={home!r} is not an absolute path"
    uid = os.getuid()
    try:
        entry = pwd.getpwuid(uid).pw_dir
    except (KeyError, OSError):
        return None, f"HOME is not set and uid {uid} has no passwd entry"
    if not os.path.isabs(entry):
        return None, f"HOME is not set and uid {uid}'s passwd entry has no absolute home"
    return entry, ""


def cache_location(environ: Mapping[str, str] | None = None) -> CacheLocation:
    """Where the caches live (see the module docstring)."""
    env = os.environ if environ is None else environ
    configured = env.get(CACHE_DIR_VARIABLE, "")
    if configured:
        return CacheLocation(Path(configured))
    xdg = env.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return CacheLocation(Path(xdg) / SUBDIRECTORY)
    home, why_not = _home(env)
    if home is not None:
        return CacheLocation(Path(home) / ".cache" / SUBDIRECTORY)
    xdg_note = f"XDG_CACHE_HOME={xdg!r} is not absolute" if xdg else "XDG_CACHE_HOME is not set"
    return CacheLocation(None, f"{why_not}, {xdg_note} and {CACHE_DIR_VARIABLE} is not set")


def announce_no_cache(location: CacheLocation) -> None:
    """Print, once per process, that the caches are off because ``location`` has no directory."""
    if location.directory is not None or location.reason in _announced:
        return
    _announced.add(location.reason)
    print(
        f"notice: caches off: no cache directory ({location.reason}); every file is parsed "
        f"afresh. Set {CACHE_DIR_VARIABLE}=DIR to keep the caches",
        file=sys.stderr,
        flush=True,
    )


def announce_damage(cache: str, path: Path | None, damage: list[str]) -> None:
    """One notice for what a cache held that no run writes: the first damage and how many more
    (each damaged part is ignored, computed again and rewritten)."""
    if not damage:
        return
    more = f" (and {len(damage) - 1} more)" if len(damage) > 1 else ""
    first = one_line(damage[0])[:200]
    print(f"notice: {cache} {path}: damaged, ignored and rewritten: {first}{more}", file=sys.stderr)


def read_entries(path: Path | None, version: int, kind: str, damage: list[str]) -> dict:
    """The ``entries`` of a cache file written as ``{"format": version, "entries": {...}}``;
    empty when there is none, and when it is damaged or of another format (``damage`` then says
    why: the file is rewritten)."""
    if path is None:
        return {}
    try:
        data = json.loads(path.read_bytes())
    except OSError:
        return {}  # absent or unreachable: writing it says why it cannot be written
    except (ValueError, RecursionError) as exc:
        damage.append(f"the file ({type(exc).__name__})")
        return {}
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or data.get("format") != version:
        damage.append(f"the file (not a format-{version} {kind})")
        return {}
    return entries
