"""Run only some files, or some cases, of a selection: ``--files``, ``--tests``, ``--from-junit``.

A :class:`RunRequest` names files (a file's path runs the whole file) and cases (node ids, see
:mod:`ci_runner.catalog.node_ids`). :func:`narrow` keeps those files of the selection, each with
the cases to run, so the plan packs only them onto the shards. A file named by ``--files`` or
``--tests`` must be one the selection runs; every one that is not is an error naming it and
saying why (not collected, disabled, registered for other suites). A request read from a report
(``--from-junit``) may name files of other suites or lanes: those are left out with a notice.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.catalog.node_ids import NodeIdError, check_case, check_relative_path
from ci_runner.model import Registration
from ci_runner.select.files import Selection
from ci_runner.select.suites import SelectionError


class RunRequestError(ValueError):
    """What to run cannot be read (a report, a list of files); the message names it."""


@dataclass(frozen=True)
class RunRequest:
    """Files and cases to run: path -> node ids of the cases (``()`` runs the whole file)."""

    files: Mapping[str, tuple[str, ...]]
    origin: str  # the flag(s) it came from, for messages: "--files", "--from-junit r.xml"
    strict: bool = True  # a file the selection does not run is an error (else a notice)
    notes: tuple[str, ...] = field(default=())  # what reading the request left out, and why
    sources: Mapping[str, str] = field(default_factory=dict)  # path -> its flag, when merged

    def source(self, path: str) -> str:
        """The flag that named ``path``."""
        return self.sources.get(path, self.origin)


def merge_requests(requests: Iterable[RunRequest]) -> RunRequest | None:
    """One request from several (``--files`` with ``--tests``): a file named whole anywhere runs
    whole; otherwise its cases are joined."""
    merged: dict[str, tuple[str, ...]] = {}
    sources: dict[str, str] = {}
    origins, notes, strict = [], [], True
    for request in requests:
        origins.append(request.origin)
        notes.extend(request.notes)
        strict = strict and request.strict
        for path, cases in request.files.items():
            sources.setdefault(path, request.source(path))
            if path in merged and (not merged[path] or not cases):
                merged[path] = ()
            else:
                merged[path] = tuple(dict.fromkeys([*merged.get(path, ()), *cases]))
    if not origins:
        return None
    return RunRequest(merged, " and ".join(origins), strict, tuple(notes), sources)


def root_relative(text: str, root: Path, cwd: Path, what: str) -> str:
    """A file path given on the command line, as a POSIX path from ``root``.

    An absolute path must lie inside the root; a relative one is taken from the current
    directory when a file is there, else from the root (reports write root-relative paths).
    """
    given = Path(text)
    if given.is_absolute() or (text.strip() and (cwd / given).is_file()):
        absolute = os.path.realpath(given if given.is_absolute() else cwd / given)
        real_root = os.path.realpath(root)
        if os.path.commonpath([absolute, real_root]) != real_root:
            raise NodeIdError(f"{what} {text!r}: {absolute} is outside the repository {real_root}")
        relative = Path(absolute).relative_to(real_root).as_posix()
    else:
        relative = os.path.normpath(text) if text.strip() else text
    return check_relative_path(relative, what, shown=text)


def files_request(paths: list[str], root: Path, cwd: Path) -> RunRequest:
    """``--files PATH...``: each file runs whole. Every malformed path is one message of the
    :class:`SelectionError` raised."""
    files: dict[str, tuple[str, ...]] = {}
    errors = []
    for text in paths:
        try:
            files[root_relative(text, root, cwd, "--files")] = ()
        except NodeIdError as exc:
            errors.append(str(exc))
    if errors:
        raise SelectionError(errors)
    return RunRequest(files, "--files")


def tests_request(node_ids: list[str], root: Path, cwd: Path) -> RunRequest:
    """``--tests FILE::CASE...``: the named cases of each file (every malformed one is one
    message of the :class:`SelectionError` raised)."""
    files: dict[str, tuple[str, ...]] = {}
    errors = []
    for text in node_ids:
        path_text, separator, case = text.partition("::")
        try:
            if not separator:
                raise NodeIdError(
                    f"--tests {text[:120]!r}: expected FILE::CASE, e.g. "
                    "registered/test_x.py::test_a or registered/test_x.py::TestX::test_a[1] "
                    "(--files runs whole files)"
                )
            path = root_relative(path_text, root, cwd, f"--tests {text[:120]!r}: file")
            node_id = f"{path}::{check_case(case, f'--tests {text[:120]!r}:')}"
        except NodeIdError as exc:
            errors.append(str(exc))
            continue
        files[path] = tuple(dict.fromkeys([*files.get(path, ()), node_id]))
    if errors:
        raise SelectionError(errors)
    return RunRequest(files, "--tests")


def narrow(
    selection: Selection, request: RunRequest, registrations: list[Registration]
) -> tuple[Selection, list[str]]:
    """The selection's files that ``request`` names, each with its cases; and the notices.

    Raises :class:`SelectionError` (one message per file) when a strict request names a file
    the selection does not run.
    """
    selected = {f.path: f for f in selection.files}
    errors, notices = [], list(request.notes)
    for path in request.files:
        if path not in selected:
            why = _not_selected(path, selection, registrations)
            if request.strict:
                errors.append(f"{request.source(path)} {path}: {why}")
            else:
                notices.append(f"{request.source(path)}: {path} left out: {why}")
    if errors:
        raise SelectionError(errors)
    files = tuple(
        dataclasses.replace(selected[path], cases=request.files[path])
        for path in sorted(request.files)
        if path in selected
    )
    narrowed = dataclasses.replace(selection, files=files, disabled=())
    return narrowed, notices


def _not_selected(path: str, selection: Selection, registrations: list[Registration]) -> str:
    disabled = [d for d in selection.disabled if d.path == path]
    if disabled:
        return f"is disabled in suite {disabled[0].suite} ({disabled[0].reason}), so it never runs"
    mine = [r for r in registrations if r.path == path]
    if not mine:
        return "is not a collected registered file (check the path, from the repository root)"
    wanted = f"--hw {selection.hw} --suite {','.join(s.name for s in selection.suites)}"
    if selection.nightly:
        wanted += " --nightly"
    registered = ", ".join(
        sorted({f"{r.backend} {r.suite}" + (" (nightly)" if r.nightly else "") for r in mine})
    )
    return f"is not selected by {wanted}; it registers for: {registered}"
