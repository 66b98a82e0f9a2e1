"""Upstream's own selection, in process: the checkout's ``test/run_suite.py`` and ``ci_register.py``.

Both are loaded by file path. The heavy imports are stubbed: ``sglang``, ``sglang.test`` and
``sglang.test.ci`` are empty packages, ``sglang.test.ci.ci_utils.run_unittest_files`` only records
the files it is given, and ``tabulate`` is a minimal table printer when it is not installed. Each
case calls upstream's ``main()`` with its argv, from ``test/`` (where the workflows run it), so
its own argument checks, suite validation, filtering and partitioning decide. The collection is
memoized (same file list -> same registrations), so ~300 cases parse the tree once.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUN_SUITE = "test/run_suite.py"
CI_REGISTER = "python/sglang/test/ci/ci_register.py"
_PACKAGES = ("sglang", "sglang.test", "sglang.test.ci")
_STUBBED = (*_PACKAGES, "sglang.test.ci.ci_register", "sglang.test.ci.ci_utils", "tabulate")


class UpstreamError(Exception):
    """The checkout's run_suite.py / ci_register.py cannot be loaded; the message says why."""


@dataclass(frozen=True)
class Selection:
    """What one upstream invocation selected: exit status, enabled files (run order), disabled."""

    rc: int
    files: tuple[str, ...]
    est: dict[str, float]
    disabled: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class Registration:
    """One upstream registration, with the ``--hw`` name of its backend (None: no such flag)."""

    path: str
    backend: str
    hw: str | None
    suite: str | None
    nightly: bool
    disabled: str | None
    est_time: float


def _module(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UpstreamError(f"{path}: cannot be loaded as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _tabulate_stub() -> types.ModuleType:
    stub = types.ModuleType("tabulate")

    def tabulate(rows: list, headers: tuple = (), tablefmt: str = "") -> str:
        return "\n".join(" | ".join(str(c) for c in row) for row in [list(headers), *rows])

    stub.tabulate = tabulate  # type: ignore[attr-defined]
    return stub


@contextlib.contextmanager
def _stubbed_modules(record: Callable[..., int]) -> Iterator[None]:
    """Install the stub modules for the duration of the load; restore sys.modules after."""
    saved = {name: sys.modules.get(name) for name in _STUBBED}
    try:
        for name in _PACKAGES:
            package = types.ModuleType(name)
            package.__path__ = []  # type: ignore[attr-defined]
            sys.modules[name] = package
        ci_utils = types.ModuleType("sglang.test.ci.ci_utils")
        ci_utils.run_unittest_files = record  # type: ignore[attr-defined]
        sys.modules["sglang.test.ci.ci_utils"] = ci_utils
        try:
            import tabulate  # noqa: F401
        except ImportError:
            sys.modules["tabulate"] = _tabulate_stub()
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


class Upstream:
    """The checkout's run_suite.py, ready to run case after case."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        for rel in (RUN_SUITE, CI_REGISTER):
            if not (self.root / rel).is_file():
                raise UpstreamError(
                    f"{self.root / rel}: missing (not a registry-based SGLang tree)"
                )
        self._ran: list[Any] | None = None
        self._skipped: list[Any] | None = None
        self._collections: dict[tuple, tuple[str, Any]] = {}
        self.collected_files: list[str] = []
        try:
            with _stubbed_modules(self._record_run):
                self.ci_register = _module("sglang.test.ci.ci_register", self.root / CI_REGISTER)
                self.run_suite = _module("_upstream_run_suite", self.root / RUN_SUITE)
        except UpstreamError:
            raise
        except Exception as exc:  # its own code failed to import: say which file and why
            raise UpstreamError(f"loading {RUN_SUITE}: {type(exc).__name__}: {exc}") from exc
        finally:
            sys.modules.pop("_upstream_run_suite", None)
        for name in ("main", "HW_MAPPING", "collect_tests"):
            if not hasattr(self.run_suite, name):
                raise UpstreamError(f"{RUN_SUITE}: no {name} (not a registry-based run_suite.py)")
        self._collect = self.run_suite.collect_tests
        self.run_suite.collect_tests = self._cached_collect
        if hasattr(self.run_suite, "filter_tests"):
            self._filter = self.run_suite.filter_tests
            self.run_suite.filter_tests = self._recording_filter
        self.hw_names = {backend: hw for hw, backend in self.run_suite.HW_MAPPING.items()}

    # ------------------------------------------------------------------ hooks

    def _record_run(self, files: list, *args: Any, **kwargs: Any) -> int:
        self._ran = list(files)
        return 0

    def _cached_collect(self, files: list[str], *args: Any, **kwargs: Any) -> Any:
        self.collected_files = list(files)
        key = (tuple(files), args, tuple(sorted(kwargs.items())))
        if key not in self._collections:
            try:
                self._collections[key] = ("ok", self._collect(files, *args, **kwargs))
            except Exception as exc:  # upstream rejects the tree: every case fails the same way
                self._collections[key] = ("error", exc)
        kind, value = self._collections[key]
        if kind == "error":
            raise value
        return list(value)

    def _recording_filter(self, *args: Any, **kwargs: Any) -> Any:
        result = self._filter(*args, **kwargs)
        if isinstance(result, tuple) and len(result) == 2:
            self._skipped = list(result[1])
        return result

    # ------------------------------------------------------------------ queries

    def _path(self, filename: str) -> str:
        return Path(os.path.relpath(self.root / "test" / filename, self.root)).as_posix()

    def run(self, hw: str, suite: str, nightly: bool, shard: tuple[int, int] | None) -> Selection:
        """Upstream's main() for one invocation, from test/; nothing is executed."""
        argv = ["run_suite.py", "--hw", hw, "--suite", suite, *(["--nightly"] if nightly else [])]
        if shard is not None:
            argv += ["--auto-partition-id", str(shard[0]), "--auto-partition-size", str(shard[1])]
        self._ran, self._skipped = None, None
        out, err = io.StringIO(), io.StringIO()
        saved_argv, rc = sys.argv, 0
        try:
            sys.argv = argv
            with (
                _in_directory(self.root / "test"),
                contextlib.redirect_stdout(out),
                contextlib.redirect_stderr(err),
                warnings.catch_warnings(),
            ):
                warnings.simplefilter("ignore")
                try:
                    self.run_suite.main()
                except SystemExit as exc:
                    rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                except Exception as exc:  # an uncaught exception: python exits 1
                    rc = 1
                    err.write(f"{type(exc).__name__}: {exc}\n")
        finally:
            sys.argv = saved_argv
        ran = self._ran or []
        files = tuple(self._path(getattr(r, "filename", r)) for r in ran)
        est = {self._path(r.filename): float(r.est_time) for r in ran if hasattr(r, "filename")}
        disabled = tuple(self._path(r.filename) for r in self._skipped or [])
        return Selection(rc, files, est, disabled, _message(rc, out.getvalue(), err.getvalue()))

    def tables(self) -> dict[str, dict[str, list[str]]]:
        """Module-level dicts of run_suite.py mapping backends to suite lists, by name and --hw."""
        backend_type = self.ci_register.HWBackend
        found = {}
        for name, value in vars(self.run_suite).items():
            if (
                isinstance(value, dict)
                and value
                and all(isinstance(k, backend_type) for k in value)
                and all(isinstance(v, list | tuple | set) for v in value.values())
            ):
                found[name] = {
                    self.hw_names.get(backend, backend.name.lower()): [str(s) for s in suites]
                    for backend, suites in value.items()
                }
        return found

    def checked_backends(self) -> list[str] | None:
        """The backends whose suite names upstream validates, where run_suite.py says."""
        value = getattr(self.run_suite, "_SUITE_CHECKED_BACKENDS", None)
        if value is None:
            return None
        return sorted(self.hw_names.get(b, b.name.lower()) for b in value)

    def registrations(self) -> list[Registration]:
        """Every registration in the files upstream collects (run once first to glob them)."""
        if not self.collected_files:
            self.run(next(iter(self.run_suite.HW_MAPPING)), "", False, None)
        # The sanity check only raises: when the run's collection passed, it holds them all.
        passed = [
            value
            for key, (kind, value) in self._collections.items()
            if key[0] == tuple(self.collected_files) and kind == "ok"
        ]
        found = passed[0] if passed else self.collect_all()
        return [
            Registration(
                path=self._path(r.filename),
                backend=r.backend.name.lower(),
                hw=self.hw_names.get(r.backend),
                suite=getattr(r, "effective_suite", getattr(r, "suite", None)),
                nightly=bool(r.nightly),
                disabled=r.disabled,
                est_time=float(r.est_time),
            )
            for r in found
        ]

    def collect_all(self) -> list:
        """Upstream's collect_tests over the files it globs, not memoized (for timing)."""
        if not self.collected_files:
            self.registrations()
        with _in_directory(self.root / "test"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._collect(self.collected_files, sanity_check=False)

    def forget_collections(self) -> None:
        """Drop the memoized collections: the next case parses the tree again."""
        self._collections.clear()

    def collected_paths(self) -> list[str]:
        if not self.collected_files:
            self.registrations()
        return sorted(self._path(f) for f in self.collected_files)


@contextlib.contextmanager
def _in_directory(path: Path) -> Iterator[None]:
    saved = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(saved)


def _message(rc: int, out: str, err: str) -> str:
    """What upstream said that matters for the comparison: its error, or its notices."""
    if rc != 0:
        lines = [line for line in err.strip().splitlines() if line.strip()]
        if not lines:
            return f"exit {rc}"
        head = lines[-1] if lines[-1].startswith(("usage:", "run_suite.py:")) else lines[0]
        more = len(lines) - 1
        return head + (f" (+{more} more line(s))" if more else "")
    notices = [
        line.strip() for line in out.splitlines() if line.startswith(("Warning:", "No tests found"))
    ]
    return "; ".join(notices)
