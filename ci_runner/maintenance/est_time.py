"""Keep declared ``est_time`` values honest, from the timings of real runs.

Samples come from ``--timings-out`` JSON lines and/or ``--junit-xml`` reports of several runs.
Per registration (path, suite) the measured value is the nearest-rank p90 of the elapsed seconds
of passing attempts (status ``passed`` or ``flaky``; timeouts and failures are excluded because
their elapsed time is not the file's run time), needing at least ``--min-samples`` samples. It
is rounded up to a whole second, at least 1.

A drift is significant when |measured - declared| >= ``--min-rel`` x declared **and** >=
``--min-abs`` seconds. ``--check`` exits 1 when any registration drifted; ``--write`` rewrites
the drifted ``est_time`` literals in place: the file is parsed with :mod:`ast`, and only the
characters of the literal itself are replaced, so formatting and comments stay as they were.

``--model-out PATH`` also writes the measured value of every (path, suite) with enough samples,
merged over every shard and run given, as the JSON file ``run_suite.py --partition-model-file``
reads, so measured times plan the shards. Rows carried over by ``--resume-from`` are not
samples: the attempt that ran the file measured it.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ci_runner.catalog import CatalogError, find_root, load_syntax
from ci_runner.catalog.limits import MAX_SECONDS, is_finite_number, number_text
from ci_runner.catalog.syntax import DEFAULT_SYNTAX, RegistrationSyntax
from ci_runner.cli_errors import (
    StoreOnce,
    number_type,
    robust_output,
    usage_error,
    whole_number_type,
)
from ci_runner.collect.calls import read_marker_calls
from ci_runner.collect.source_text import encoding_of, python_lines
from ci_runner.file_safety import (
    content_problem,
    destination_problem,
    read_regular,
    read_regular_text,
    why,
    write_atomic,
)
from ci_runner.maintenance.junit_files import (
    JUnitReadError,
    number,
    properties,
    raw_attributes,
    read_testsuites,
)
from ci_runner.model import STATUSES

PASSING = frozenset({"passed", "flaky"})
Key = tuple[str, str]  # (path, suite)
MAX_SAMPLES = 1_000_000  # --min-samples
MAX_REL = 1000.0  # --min-rel


class EstTimeInputError(Exception):
    """A timings file cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class EstTimeLiteral:
    """Where one registration's ``est_time`` literal sits in its file."""

    path: str
    suite: str
    value: float | None  # None: est_time is not a plain number literal
    line: int  # 1-based
    col: int  # 0-based, in characters
    end_col: int
    text: str  # the literal as written


@dataclass(frozen=True)
class Drift:
    """A registration whose measured p90 is far from its declared est_time."""

    path: str
    suite: str
    declared: float
    measured: int
    samples: int

    def describe(self) -> str:
        ratio = self.measured / self.declared if self.declared else math.inf
        return (
            f"{self.path} [{self.suite}]: declared est_time={self.declared:g}s, measured "
            f"p90={self.measured}s ({ratio:.1f}x, {self.samples} samples)"
        )


# ---------------------------------------------------------------------------- samples


def _timing_files(paths: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            # Shard artifacts hold both formats of the same run: take the JSON lines, and JUnit
            # only where a directory has no JSON lines, so no run is counted twice.
            jsonl = sorted(path.rglob("*.jsonl"))
            found.extend(jsonl or sorted(path.rglob("*.xml")))
        elif os.path.lexists(path):
            found.append(path)  # read_regular says what it is if it is no regular file
        else:
            raise EstTimeInputError(f"{path}: timings file or directory not found")
    return found


def checked_path(text: object, where: str) -> str:
    """A timings row's ``path``: a relative POSIX path inside the repository (no ``..``), since
    ``--write`` rewrites the file it names."""
    path = PurePosixPath(str(text))
    if not str(text) or path.is_absolute() or ".." in path.parts or "\0" in str(text):
        raise EstTimeInputError(
            f"{where}: path {str(text)[:80]!r} is not a path inside the repository; expected "
            "one relative to the root, such as registered/test_x.py"
        )
    return path.as_posix()


class DroppedSample(Exception):
    """One sample is not usable (its elapsed is no number of seconds in range, its status none
    the runner writes); the message names the key. The row is left out with a note."""


def _elapsed(value: object, text: bool = False) -> float:
    """A sample's elapsed seconds: a JSON number (never ``true``, which Python counts as 1) or,
    from JUnit (``text``), the text of one; finite, from 0 to a week."""
    if text and isinstance(value, str):
        seconds = number(value.strip())
    elif isinstance(value, bool) or not isinstance(value, int | float):
        seconds = None
    else:
        seconds = float(value) if is_finite_number(value) else None
    if seconds is None or not 0 <= seconds <= MAX_SECONDS:
        raise DroppedSample(
            f"elapsed must be a number of seconds from 0 to {MAX_SECONDS}, got "
            f"{number_text(value)} ({type(value).__name__})"
        )
    return seconds


def _status(value: object) -> str:
    if value not in STATUSES:
        raise DroppedSample(
            f"status must be one of {', '.join(STATUSES)}, got {number_text(value)}"
        )
    return str(value)


def _jsonl_samples(path: Path, notes: list[str]) -> Iterable[tuple[Key, str, float]]:
    try:
        text = read_regular_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise EstTimeInputError(f"{path}: cannot read it as UTF-8 text ({why(exc)})") from None
    for line_number, line in enumerate(text.split("\n"), start=1):  # JSON may hold U+2028
        if not line.strip():
            continue
        where = f"{path}:{line_number}"
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or not all(
                isinstance(row[key], str) for key in ("path", "suite")
            ):
                raise TypeError("path and suite must be strings")
            key = (checked_path(row["path"], where), row["suite"])
            elapsed = row["elapsed"]
        except (json.JSONDecodeError, KeyError, TypeError, RecursionError) as exc:
            raise EstTimeInputError(
                f"{where}: expected a JSON object with path, suite, elapsed, status "
                f"({type(exc).__name__}: {str(exc)[:200]})"
            ) from None
        if row.get("resumed") is True:
            continue  # carried over by --resume-from: measured by the attempt that ran it
        try:
            yield key, _status(row.get("status", "passed")), _elapsed(elapsed)
        except DroppedSample as exc:
            notes.append(f"{where}: {exc}; this sample is left out")


def _junit_samples(path: Path, notes: list[str]) -> Iterable[tuple[Key, str, float]]:
    try:
        suites = read_testsuites(path)
    except JUnitReadError as exc:
        raise EstTimeInputError(str(exc)) from None
    foreign = 0
    for suite in suites:
        props = properties(suite)
        if "suite" not in props:
            foreign += 1
            continue
        if props.get("resumed") == "true":
            continue  # carried over by --resume-from: measured by the attempt that ran it
        where = f"{path}: testsuite {str(suite.name)[:80]!r}"
        rel_path = checked_path(props.get("path") or suite.name or "", where)
        elapsed = props.get("elapsed")
        if elapsed is None:  # a report of another writer: its time attribute
            elapsed = raw_attributes(suite).get("time")
        try:
            if elapsed is None:
                raise DroppedSample("it has neither an elapsed property nor a time attribute")
            sample = (
                (rel_path, props["suite"]),
                _status(props.get("status")),
                _elapsed(elapsed, text=True),
            )
        except DroppedSample as exc:
            notes.append(f"{where}: {exc}; this sample is left out")
            continue
        yield sample
    if foreign:
        notes.append(
            f"{path}: {foreign} testsuite(s) without a suite property (not written by "
            "run_suite.py) left out"
        )


def load_samples(paths: Iterable[Path], notes: list[str] | None = None) -> dict[Key, list[float]]:
    """Elapsed seconds of passing runs per (path, suite), from JSONL and/or JUnit files; a
    sample that is left out is a line of ``notes``."""
    notes = [] if notes is None else notes
    samples: dict[Key, list[float]] = defaultdict(list)
    files = _timing_files(paths)
    if not files:
        raise EstTimeInputError("no timings files found (pass --timings FILE_OR_DIR)")
    for path in files:
        read = _junit_samples if path.suffix == ".xml" else _jsonl_samples
        for key, status, elapsed in read(path, notes):
            if status in PASSING:
                samples[key].append(elapsed)
    return dict(samples)


def p90(values: Sequence[float]) -> float:
    """Nearest-rank 90th percentile: the ceil(0.9 n)-th smallest value."""
    if not values:
        raise ValueError("p90 of no samples")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def measured_est(values: Sequence[float]) -> int:
    """The est_time to declare for these samples: p90 rounded up to a second, at least 1."""
    return max(1, math.ceil(p90(values)))


# ---------------------------------------------------------------------------- source


def _char_col(line_text: str, byte_col: int) -> int:
    return len(line_text.encode("utf-8")[:byte_col].decode("utf-8"))


def find_literals(
    source: str, rel_path: str, syntax: RegistrationSyntax = DEFAULT_SYNTAX
) -> list[EstTimeLiteral]:
    """The est_time literal of every registration (raises SyntaxError on bad Python, and
    RecursionError or MemoryError on nesting too deep for Python's parser).

    Registrations and their suites are read as the collector reads them
    (:mod:`ci_runner.collect.calls`): however the marker is bound, ``suite=`` or the name the
    catalog's ``suite-template`` composes.
    """
    tree = ast.parse(source, filename=rel_path)
    lines = python_lines(source)
    found: list[EstTimeLiteral] = []
    for call in read_marker_calls(tree, syntax).registrations:
        suite = call.suite
        est = call.arguments.values.get("est_time")
        if suite is None or est is None:
            continue  # malformed: the collector reports it
        is_number = (
            isinstance(est, ast.Constant)
            and isinstance(est.value, int | float)
            and not isinstance(est.value, bool)
            and est.lineno == est.end_lineno
        )
        line_text = lines[est.lineno - 1]
        col = _char_col(line_text, est.col_offset)
        end_col = _char_col(line_text, est.end_col_offset) if est.lineno == est.end_lineno else col
        found.append(
            EstTimeLiteral(
                path=rel_path,
                suite=suite,
                value=float(est.value) if is_number else None,  # type: ignore[union-attr]
                line=est.lineno,
                col=col,
                end_col=end_col,
                text=line_text[col:end_col],
            )
        )
    return found


def rewrite(source: str, edits: Sequence[tuple[EstTimeLiteral, int]]) -> str:
    """``source`` with each literal replaced by its new value; nothing else changes."""
    lines = python_lines(source)
    for literal, value in sorted(edits, key=lambda e: (e[0].line, e[0].col), reverse=True):
        text = lines[literal.line - 1]
        if text[literal.col : literal.end_col] != literal.text:
            raise ValueError(f"{literal.path}:{literal.line}: source changed while rewriting")
        lines[literal.line - 1] = text[: literal.col] + str(value) + text[literal.end_col :]
    return "".join(lines)


# ---------------------------------------------------------------------------- the model file


def partition_model(samples: dict[Key, list[float]], min_samples: int) -> dict[str, dict[str, int]]:
    """The ``est`` table of the ``--partition-model-file`` document: suite -> path -> the
    measured seconds (:func:`measured_est`) of every (path, suite) with at least
    ``min_samples`` samples; the other files keep their est_time when the planner reads it."""
    est: dict[str, dict[str, int]] = {}
    for (path, suite), values in sorted(samples.items()):
        if len(values) >= min_samples:
            est.setdefault(suite, {})[path] = measured_est(values)
    return est


def write_model(path: Path, est: dict[str, dict[str, int]]) -> None:
    """Write ``{"est": est}`` to ``path`` atomically; refuse a link, a non-regular file, or an
    existing file that is not JSON (:class:`EstTimeInputError`, naming the flag)."""
    problem = destination_problem(path) or content_problem(path, b"{", "a JSON model file")
    if problem:
        raise EstTimeInputError(f"--model-out {path}: {problem}")
    text = json.dumps({"est": est}, indent=1, sort_keys=True) + "\n"
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise EstTimeInputError(f"--model-out {path}: cannot write it: {why(exc)}") from None


# ---------------------------------------------------------------------------- the command


def _read_source(root: Path, rel_path: str) -> tuple[str, str]:
    """The text of ``root/rel_path`` as Python decodes it (its BOM, its coding cookie) and that
    encoding: a regular file, not a link, inside the repository (the only files ``--write`` may
    rewrite); else :class:`EstTimeInputError` saying why not."""
    real_root, real = os.path.realpath(root), os.path.realpath(root / rel_path)
    if not real.startswith(real_root + os.sep):
        raise EstTimeInputError(f"it leads to {real}, outside the repository {real_root}")
    try:
        data = read_regular(root / rel_path, follow_links=False)
        encoding = encoding_of(data)
        return data.decode(encoding), encoding
    except FileNotFoundError:
        raise EstTimeInputError(f"file not found under {root}") from None
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        raise EstTimeInputError(
            f"cannot read it as a regular Python source file ({why(exc)})"
        ) from None


def is_significant(declared: float, measured: float, min_rel: float, min_abs: float) -> bool:
    """|measured - declared| >= min_rel x declared and >= min_abs seconds."""
    delta = abs(measured - declared)
    return delta >= min_abs and delta >= min_rel * declared


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ci_runner.maintenance update-est-time",
        description="Compare declared est_time with measured p90 run times; report or rewrite.",
    )
    parser.add_argument(
        "--timings",
        action="append",
        required=True,
        type=Path,
        metavar="FILE_OR_DIR",
        help="timings JSONL (--timings-out) or JUnit XML (--junit-xml) of past runs; repeatable; "
        "a directory means every *.jsonl under it (every *.xml if it has no *.jsonl)",
    )
    parser.add_argument(
        "--root", action=StoreOnce, type=Path, help="repository root (default: found from cwd)"
    )
    parser.add_argument(
        "--min-samples",
        action=StoreOnce,
        type=whole_number_type(1, MAX_SAMPLES),
        default=3,
        help="samples needed (default 3)",
    )
    parser.add_argument(
        "--min-rel",
        action=StoreOnce,
        type=number_type("times the declared value", MAX_REL, minimum_exclusive=False),
        default=0.3,
        help="relative drift threshold (default 0.3)",
    )
    parser.add_argument(
        "--min-abs",
        action=StoreOnce,
        type=number_type("seconds", MAX_SECONDS, minimum_exclusive=False),
        default=10.0,
        help="absolute drift threshold, s (default 10)",
    )
    parser.add_argument(
        "--model-out",
        action=StoreOnce,
        type=Path,
        metavar="PATH",
        help="also write the measured seconds of every file with --min-samples samples as the "
        'JSON file --partition-model-file reads ({"est": {suite: {path: seconds}}})',
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 when any est_time drifted")
    mode.add_argument("--write", action="store_true", help="rewrite drifted est_time literals")
    args = parser.parse_args(argv)
    robust_output()

    try:
        root = args.root.resolve() if args.root else find_root(Path.cwd())
        syntax = load_syntax(root)
        notes: list[str] = []
        samples = load_samples(args.timings, notes)
        if args.model_out is not None:
            est = partition_model(samples, args.min_samples)
            write_model(args.model_out, est)
            count = sum(len(files) for files in est.values())
            print(
                f"wrote {args.model_out}: measured seconds of {count} file(s) in {len(est)} "
                f"suite(s) (those with at least {args.min_samples} passing sample(s))"
            )
    except (CatalogError, EstTimeInputError) as exc:
        return usage_error(exc, prog="update-est-time")

    drifts: list[Drift] = []
    edits: dict[str, list[tuple[EstTimeLiteral, int]]] = defaultdict(list)
    for (path, suite), values in sorted(samples.items()):
        if len(values) < args.min_samples:
            notes.append(f"{path} [{suite}]: {len(values)} sample(s) < {args.min_samples}, kept")
            continue
        try:
            literals = find_literals(_read_source(root, path)[0], path, syntax)
        except EstTimeInputError as exc:
            notes.append(f"{path} [{suite}]: {exc}, skipped")
            continue
        except SyntaxError as exc:
            notes.append(f"{path}:{exc.lineno}: syntax error, skipped")
            continue
        except (RecursionError, MemoryError, ValueError):
            notes.append(f"{path} [{suite}]: cannot parse it, skipped")
            continue
        matching = [lit for lit in literals if lit.suite == suite]
        if not matching:
            notes.append(f"{path} [{suite}]: no registration for this suite any more, skipped")
            continue
        measured = measured_est(values)
        for literal in matching:
            if literal.value is None:
                notes.append(
                    f"{path}:{literal.line}: est_time {literal.text!r} is not a number "
                    "literal, cannot check or rewrite it"
                )
                continue
            if is_significant(literal.value, measured, args.min_rel, args.min_abs):
                drifts.append(Drift(path, suite, literal.value, measured, len(values)))
                edits[path].append((literal, measured))

    for note in notes:
        print(f"note: {note}")
    for drift in drifts:
        print(f"drift: {drift.describe()}")
    rule = f">= {args.min_rel:.0%} and >= {args.min_abs:g}s"
    if args.write:
        literals = files = 0
        for path, file_edits in sorted(edits.items()):
            try:
                text, encoding = _read_source(root, path)
                new_text = rewrite(text, file_edits)
                write_atomic(root / path, new_text.encode(encoding))  # utf-8-sig keeps a BOM
            except (EstTimeInputError, ValueError, OSError) as exc:
                print(f"note: {path}: not rewritten ({exc})")
                continue
            literals, files = literals + len(file_edits), files + 1
        print(f"rewrote {literals} est_time literal(s) in {files} file(s)")
        return 0
    print(f"{len(drifts)} registration(s) drifted ({rule}) over {len(samples)} measured")
    if args.check and drifts:
        print(
            "update the est_time values: python -m ci_runner.maintenance update-est-time --write --timings ..."
        )
        return 1
    return 0
