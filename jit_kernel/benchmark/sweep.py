"""What a benchmark sweeps: the :class:`Sweep` a declaration describes, and ``@parametrize``.

The first stage of the data flow sweep -> run (:mod:`.runner`) -> report (:mod:`.report`) ->
table / export. ``@benchmark(line_arg, line_vals)`` (in :mod:`.runner`, since its result can
``run()``) makes a :class:`Sweep`; each ``@parametrize`` stacked above it adds a row axis. Rows
are the Cartesian product of the axes in top-down decorator order (the top axis varies slowest);
each row is measured once per line value (one table column per value). This module imports no
later stage.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from jit_kernel.benchmark.results import UNIT_SCALES
from jit_kernel.env import get_ci_test_range

__all__ = ["UNIT_SCALES", "Axis", "BenchmarkDefinitionError", "Sweep", "parametrize"]

S = TypeVar("S", bound="Sweep")


class BenchmarkDefinitionError(ValueError):
    """A ``@benchmark`` / ``@parametrize`` declaration that cannot describe a sweep."""


def describe_function(fn: Callable[..., Any]) -> str:
    """``path/to/file.py:12: benchmark`` for error messages."""
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", repr(fn))
    if code is None:
        return name
    return f"{code.co_filename}:{code.co_firstlineno}: {name}"


def _duplicate(values: Sequence[Any]) -> Any | None:
    """The first value that equals an earlier one (works for unhashable values), else None."""
    for index, value in enumerate(values):
        for earlier in values[:index]:
            try:
                same = bool(earlier == value)
            except Exception:  # e.g. tensors: ambiguous truth value
                same = earlier is value
            if same:
                return (value,)
    return None


@dataclass(frozen=True)
class Axis:
    """One ``@parametrize``: one or more correlated names and their value tuples."""

    names: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]
    ci_values: tuple[tuple[Any, ...], ...] | None = None

    def selected_values(self) -> tuple[tuple[Any, ...], ...]:
        """``ci_values`` in per-commit CI (see ``get_ci_test_range``), else ``values``."""
        if self.ci_values is None:
            return self.values
        return get_ci_test_range(self.values, self.ci_values)


class Sweep:
    """A benchmark function with its column axis (``line_arg``) and row axes."""

    def __init__(
        self, fn: Callable[..., Any], line_arg: str, line_vals: Sequence[Any], unit: str
    ) -> None:
        self.fn = fn
        self.where = describe_function(fn)
        self._signature = inspect.signature(fn)
        if unit not in UNIT_SCALES:
            raise BenchmarkDefinitionError(
                f"{self.where}: @benchmark unit={unit!r} is not one of "
                f"{', '.join(repr(u) for u in UNIT_SCALES)}"
            )
        if not isinstance(line_arg, str):
            raise BenchmarkDefinitionError(
                f"{self.where}: @benchmark line_arg must be a parameter name (str), "
                f"got {line_arg!r}"
            )
        self._check_parameter(line_arg, "@benchmark line_arg")
        if isinstance(line_vals, str | bytes) or not isinstance(line_vals, Sequence):
            raise BenchmarkDefinitionError(
                f"{self.where}: @benchmark line_vals must be a list of values, got {line_vals!r}"
            )
        if not line_vals:
            raise BenchmarkDefinitionError(f"{self.where}: @benchmark line_vals is empty")
        duplicate = _duplicate(line_vals)
        if duplicate is not None:
            raise BenchmarkDefinitionError(
                f"{self.where}: @benchmark line_vals has the value {duplicate[0]!r} twice"
            )
        self.line_arg = line_arg
        self.line_vals: tuple[Any, ...] = tuple(line_vals)
        self.unit = unit
        self.axes: list[Axis] = []
        functools.update_wrapper(self, fn)

    # -- declaration -------------------------------------------------------------------------

    def _accepts_any_keyword(self) -> bool:
        return any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in self._signature.parameters.values()
        )

    def _check_parameter(self, name: str, what: str) -> None:
        param = self._signature.parameters.get(name)
        by_keyword = (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        )
        if param is not None and param.kind in by_keyword:
            return
        if param is None and self._accepts_any_keyword():
            return
        accepted = [p.name for p in self._signature.parameters.values() if p.kind in by_keyword]
        raise BenchmarkDefinitionError(
            f"{self.where}: {what} {name!r} is not a keyword parameter of the function "
            f"(its parameters: {', '.join(accepted) or 'none'})"
        )

    def add_axis(self, axis: Axis) -> None:
        """Add a row axis above the existing ones (decorators apply bottom-up)."""
        taken = {self.line_arg: "the @benchmark line_arg"}
        for existing in self.axes:
            for name in existing.names:
                taken[name] = "another @parametrize"
        for name in axis.names:
            self._check_parameter(name, "@parametrize name")
            if name in taken:
                raise BenchmarkDefinitionError(
                    f"{self.where}: @parametrize name {name!r} is already used by {taken[name]}"
                )
        self.axes.insert(0, axis)

    # -- the sweep ---------------------------------------------------------------------------

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Every swept parameter name, top decorator first."""
        return tuple(name for axis in self.axes for name in axis.names)

    def check_complete(self) -> None:
        """Raise if a parameter without a default is neither swept nor the line_arg."""
        covered = {self.line_arg, *self.axis_names}
        missing = [
            p.name
            for p in self._signature.parameters.values()
            if p.default is inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
            and p.name not in covered
        ]
        if missing:
            raise BenchmarkDefinitionError(
                f"{self.where}: parameter(s) {', '.join(missing)} have no default and no "
                f"@parametrize (nor are the @benchmark line_arg {self.line_arg!r})"
            )

    def rows(self) -> list[dict[str, Any]]:
        """The row parameter dicts, in order (CI or full values, chosen now)."""
        self.check_complete()
        per_axis = [axis.selected_values() for axis in self.axes]
        rows = []
        for combination in itertools.product(*per_axis):
            row: dict[str, Any] = {}
            for axis, values in zip(self.axes, combination, strict=True):
                row.update(zip(axis.names, values, strict=True))
            rows.append(row)
        return rows

    def uses_ci_values(self) -> bool:
        """True when at least one axis currently selects its ``ci_vals``."""
        return any(
            axis.ci_values is not None and axis.selected_values() is axis.ci_values
            for axis in self.axes
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the undecorated function (one cell)."""
        return self.fn(*args, **kwargs)


def _parse_names(names: object, where: str) -> tuple[str, ...]:
    if not isinstance(names, str):
        raise BenchmarkDefinitionError(
            f"{where}: @parametrize names must be a string such as 'size' or 'h,d', got {names!r}"
        )
    parsed = tuple(part.strip() for part in names.split(","))
    if not all(part.isidentifier() for part in parsed):
        raise BenchmarkDefinitionError(
            f"{where}: @parametrize names {names!r} must be identifiers separated by commas"
        )
    if len(set(parsed)) != len(parsed):
        raise BenchmarkDefinitionError(f"{where}: @parametrize names {names!r} repeat a name")
    return parsed


def _normalize_values(
    names: tuple[str, ...], values: object, label: str, where: str
) -> tuple[tuple[Any, ...], ...]:
    spelled = ",".join(names)
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise BenchmarkDefinitionError(
            f"{where}: @parametrize({spelled!r}) {label} must be a list, got {values!r}"
        )
    if not values:
        raise BenchmarkDefinitionError(f"{where}: @parametrize({spelled!r}) {label} is empty")
    rows: list[tuple[Any, ...]] = []
    for index, value in enumerate(values):
        if len(names) == 1:
            rows.append((value,))
            continue
        if not isinstance(value, tuple | list) or len(value) != len(names):
            raise BenchmarkDefinitionError(
                f"{where}: @parametrize({spelled!r}) {label}[{index}] = {value!r} must be a "
                f"tuple of {len(names)} values (one per name)"
            )
        rows.append(tuple(value))
    duplicate = _duplicate(rows)
    if duplicate is not None:
        shown = duplicate[0][0] if len(names) == 1 else duplicate[0]
        raise BenchmarkDefinitionError(
            f"{where}: @parametrize({spelled!r}) {label} has the value {shown!r} twice"
        )
    return tuple(rows)


def parametrize(
    names: str, vals: Sequence[Any], ci_vals: Sequence[Any] | None = None
) -> Callable[[S], S]:
    """Add a row axis: ``names`` is ``"size"`` or correlated ``"h,d"`` (then vals are tuples).

    ``ci_vals`` (optional) replaces ``vals`` in per-commit CI, like ``get_ci_test_range``.
    """

    def decorate(target: S) -> S:
        if not isinstance(target, Sweep):
            raise BenchmarkDefinitionError(
                f"{describe_function(target)}: @parametrize({names!r}, ...) must be stacked "
                "above @benchmark(...), which is the innermost decorator"
            )
        parsed = _parse_names(names, target.where)
        axis = Axis(
            names=parsed,
            values=_normalize_values(parsed, vals, "vals", target.where),
            ci_values=None
            if ci_vals is None
            else _normalize_values(parsed, ci_vals, "ci_vals", target.where),
        )
        target.add_axis(axis)
        return target

    return decorate
