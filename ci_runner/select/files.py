"""The files of the requested suites: one entry per file, disabled ones listed with their reasons.

A file registered for several of the suites runs once; see :func:`select`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_runner.catalog import ALL_GPUS, Catalog, Suite
from ci_runner.model import DisabledFile, FileToRun, Registration
from ci_runner.select.suites import (
    PLACEHOLDER_SUITE,
    SelectionError,
    SuiteRequest,
    request_suites,
)


@dataclass(frozen=True)
class Selection:
    """The enabled files to plan (one entry per file) and the disabled ones to list."""

    hw: str
    suites: tuple[Suite, ...]
    nightly: bool
    files: tuple[FileToRun, ...]  # sorted by path
    disabled: tuple[DisabledFile, ...]  # sorted by path, then suite

    @property
    def est_total(self) -> float:
        return sum(f.est_time for f in self.files)


def select(
    registrations: list[Registration],
    catalog: Catalog,
    hw: str,
    suite_names: list[str],
    nightly: bool,
    allow_empty: bool = False,
) -> Selection:
    """:func:`select_files` for the suites ``suite_names`` of ``hw`` (resolved here)."""
    request = request_suites(catalog, hw, suite_names, nightly)
    return select_files(registrations, catalog, request, allow_empty)


def select_files(
    registrations: list[Registration],
    catalog: Catalog,
    request: SuiteRequest,
    allow_empty: bool = False,
) -> Selection:
    """Pick the registrations of the requested suites and merge them to one entry per file.

    A file registered for several of the suites runs once, with the largest est_time among its
    enabled registrations (and that registration's suite; GPUs: see :func:`gpu_need`).
    A file is listed as disabled only when all its selected registrations are disabled.
    """
    hw, nightly, suites = request.hw, request.nightly, list(request.suites)
    rank = {suite.name: index for index, suite in enumerate(suites)}
    if request.placeholders:
        rank[PLACEHOLDER_SUITE] = len(rank)
    chosen = [
        r for r in registrations if r.backend == hw and r.suite in rank and r.nightly == nightly
    ]
    enabled: dict[str, list[Registration]] = {}
    disabled: dict[str, list[Registration]] = {}
    for reg in chosen:
        (enabled if reg.disabled is None else disabled).setdefault(reg.path, []).append(reg)
    if not (allow_empty or catalog.policy.empty_is_notice):
        _check_not_empty(suites, chosen)
    files = tuple(_merge(path, regs, catalog, rank) for path, regs in sorted(enabled.items()))
    skipped = tuple(
        DisabledFile(path=r.path, suite=r.suite, reason=str(r.disabled))
        for path, regs in sorted(disabled.items())
        if path not in enabled
        for r in sorted(regs, key=lambda r: rank[r.suite])
    )
    return Selection(hw=hw, suites=tuple(suites), nightly=nightly, files=files, disabled=skipped)


def _merge(
    path: str, regs: list[Registration], catalog: Catalog, rank: dict[str, int]
) -> FileToRun:
    main = min(regs, key=lambda r: (-r.est_time, rank[r.suite]))
    gpus, all_gpus, gpus_from = gpu_need(regs, catalog)
    return FileToRun(
        path=path,
        suite=main.suite,
        est_time=main.est_time,
        gpus=gpus,
        all_gpus=all_gpus,
        gpus_from=gpus_from,
        quarantined=file_quarantine(path, regs, catalog),
    )


def file_quarantine(path: str, regs: list[Registration], catalog: Catalog) -> str | None:
    """Why the whole file is quarantined: a catalog ``quarantine`` key naming the file, or
    ``quarantined=`` in every selected enabled registration (one that leaves it out keeps the
    file's failures failing the job); else None."""
    for entry in catalog.quarantine:
        if entry.target.path == path and not entry.target.case:
            return entry.reason
    reasons = [r.quarantined for r in regs]
    if reasons and all(reasons):
        return reasons[0]
    return None


def gpu_need(regs: list[Registration], catalog: Catalog) -> tuple[int, bool, str]:
    """(GPUs, every GPU?, why) for a file with these enabled registrations.

    Each registration needs its suite's ``gpus-per-file`` (``"all"``: every GPU of the runner,
    at least 1) and, when given, its ``min_gpus``; the file needs the largest of these.
    """
    need, all_gpus, why = 0, False, ""
    for reg in regs:
        suite = _suite(catalog, reg.suite, reg.backend)
        if suite.gpus_per_file == ALL_GPUS:
            all_gpus = True
            needs = [(1, f'gpus-per-file = "all" of suite {suite.name}')]
        else:
            count = int(suite.gpus_per_file)
            needs = [(count, f"gpus-per-file = {count} of suite {suite.name}")]
        if reg.min_gpus is not None:
            needs.append(
                (reg.min_gpus, f"min_gpus={reg.min_gpus} in its {suite.name} registration")
            )
        for count, reason in needs:
            if count > need:
                need, why = count, reason
    return need, all_gpus, why


def _suite(catalog: Catalog, name: str, hw: str) -> Suite:
    suite = catalog.suite_for(name, hw)
    assert suite is not None  # request_suites checked every selected name
    return suite


def empty_notice(selection: Selection) -> str | None:
    """The notice for a selection without an enabled file (``empty-selection = "notice"``)."""
    if selection.files:
        return None
    nightly = " --nightly" if selection.nightly else ""
    suites = ",".join(s.name for s in selection.suites) or "''"
    disabled = (
        f" ({len(selection.disabled)} disabled, listed as skipped)" if selection.disabled else ""
    )
    return (
        f"notice: no enabled file registered for --hw {selection.hw} --suite {suites}{nightly}"
        f'{disabled}; nothing to run, exit 0 (the catalog\'s policy: empty-selection = "notice")'
    )


def _check_not_empty(suites: list[Suite], chosen: list[Registration]) -> None:
    errors = []
    for suite in suites:
        mine = [r for r in chosen if r.suite == suite.name]
        if not any(r.disabled is None for r in mine):
            detail = f" ({len(mine)} disabled)" if mine else ""
            errors.append(
                f"suite {suite.name!r} selects no enabled file{detail}; register files for it, "
                "or pass --allow-empty if that is intended"
            )
    if errors:
        raise SelectionError(errors)
