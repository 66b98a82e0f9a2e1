"""Check the bound arguments of one accepted marker call into a Registration, reporting every
problem (the binding itself is :func:`ci_runner.collect.calls.bind_arguments`).

Every argument must be a literal. The suite is named either by ``suite=`` or, when the catalog
declares a ``suite-template``, by all of the template's fields (``stage=`` + ``runner_config=``),
never both. ``est_time=0`` is valid (an estimate bot may write it; the planner handles it);
``suite=""`` is accepted only in a disabled registration: such a placeholder marks a helper file
as registered without putting it in a suite.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping

from ci_runner.catalog.limits import MAX_GPUS, MAX_SECONDS, number_text
from ci_runner.catalog.syntax import MIN_GPUS, QUARANTINED, RegistrationSyntax
from ci_runner.collect.calls import MarkerCall, shown
from ci_runner.model import Problem, Registration

_MISSING = object()
Report = Callable[[ast.AST, str], None]


def parse_call(
    marker_call: MarkerCall, rel_path: str, syntax: RegistrationSyntax
) -> tuple[Registration | None, list[Problem]]:
    """Turn one accepted marker call into a Registration, or into Problems."""
    problems: list[Problem] = []

    def report(node: ast.AST, message: str) -> None:
        problems.append(Problem(rel_path, node.lineno, node.col_offset + 1, message))  # type: ignore[attr-defined]

    call, marker, bound = marker_call.call, marker_call.marker, marker_call.arguments
    for node, message in bound.issues:
        report(node, message)
    values = bound.values
    if not bound.unpacked:
        if "est_time" not in values:
            report(call, f"{marker}() is missing the required argument 'est_time'")
        _check_suite_form(call, marker, values, bound.keywords, syntax, report)
    checked: dict[str, object] = {}
    for name, node in values.items():
        value = _literal(node)
        if value is _MISSING:
            report(
                node,
                f"{name} must be a literal ({_expected(name, syntax)}), got `{shown(node)}`: "
                "the runner reads registrations without running the file",
            )
            continue
        error = _checker(name, syntax)(value)
        if error:
            report(node, f"{name} {error}")
        else:
            checked[name] = value
    if not problems:
        _check_placeholders(values, checked, report)
        _check_quarantine(marker, values, checked, report)
    if problems:
        return None, problems
    return _registration(call, marker, rel_path, syntax, checked), []


def _check_suite_form(
    call: ast.Call,
    marker: str,
    values: Mapping[str, ast.expr],
    keywords: Mapping[str, ast.keyword],
    syntax: RegistrationSyntax,
    report: Report,
) -> None:
    """``suite=`` or every template field, never both, never only some fields."""
    template = syntax.suite_template
    fields = syntax.template_fields
    given = [name for name in fields if name in values]
    composed = " and ".join(f"{name}=" for name in fields)
    if "suite" in values and given:
        report(
            keywords[given[0]],
            f"suite= and {', '.join(f'{n}=' for n in given)} cannot be combined in {marker}(): "
            f"name the suite either with suite= or with {composed} "
            f"(which compose {template.describe() if template else ''})",
        )
    elif given and len(given) < len(fields):
        missing = [name for name in fields if name not in values]
        report(
            call,
            f"{marker}() gives {', '.join(f'{n}=' for n in given)} but not "
            f"{', '.join(f'{n}=' for n in missing)}: the suite name "
            f"{template.describe() if template else ''} needs all of {composed} "
            "(or pass suite= alone)",
        )
    elif "suite" not in values and not given:
        alternative = f" (or {composed}, which compose {template.describe()})" if template else ""
        report(call, f"{marker}() is missing the required argument 'suite'{alternative}")


def _check_placeholders(
    values: Mapping[str, ast.expr], checked: dict[str, object], report: Report
) -> None:
    """``suite=""`` only in a disabled registration."""
    if checked.get("disabled") is not None:
        return
    if checked.get("suite") == "":
        report(
            values["suite"],
            'suite must be a non-empty suite name (suite="" is accepted only in a disabled '
            'registration: disabled="reason")',
        )


def _check_quarantine(
    marker: str, values: Mapping[str, ast.expr], checked: dict[str, object], report: Report
) -> None:
    """``quarantined=`` runs the file, ``disabled=`` does not: one registration says one."""
    if checked.get(QUARANTINED) is not None and checked.get("disabled") is not None:
        report(
            values[QUARANTINED],
            f"quarantined= and disabled= cannot be combined in {marker}(): a quarantined file "
            "runs and is reported without failing the job, a disabled one never runs; keep one",
        )


def _registration(
    call: ast.Call,
    marker: str,
    rel_path: str,
    syntax: RegistrationSyntax,
    checked: dict[str, object],
) -> Registration:
    parts = tuple((name, str(checked[name])) for name in syntax.template_fields if name in checked)
    template = syntax.suite_template
    suite = template.compose(dict(parts)) if parts and template else str(checked["suite"])
    est = checked["est_time"]
    min_gpus = checked.get(MIN_GPUS)
    return Registration(
        path=rel_path,
        backend=syntax.markers[marker],
        suite=suite,
        est_time=float(est),  # type: ignore[arg-type]
        nightly=bool(checked.get("nightly", False)),
        disabled=checked.get("disabled"),  # type: ignore[arg-type]
        line=call.lineno,
        col=call.col_offset + 1,
        min_gpus=int(min_gpus) if min_gpus is not None else None,  # type: ignore[call-overload]
        composed_from=parts,
        quarantined=checked.get(QUARANTINED),  # type: ignore[arg-type]
    )


def _literal(node: ast.expr) -> object:
    """The value of a literal constant (a signed number counts), else ``_MISSING``."""
    if isinstance(node, ast.Constant):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        value = node.operand.value
        return -value if isinstance(node.op, ast.USub) else value
    return _MISSING


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _check_est_time(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number of seconds, got {number_text(value)} ({_type_name(value)})"
    if value < 0 or (isinstance(value, float) and not math.isfinite(value)):
        return f"must be a finite number of seconds, 0 or more, got {number_text(value)}"
    if value > MAX_SECONDS:
        return f"must be at most {MAX_SECONDS} seconds (a week), got {number_text(value)}"
    return None


def _check_suite(value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, got {number_text(value)} ({_type_name(value)})"
    if value and not value.strip():
        return "must be a non-empty suite name"
    return None


def _check_nightly(value: object) -> str | None:
    if not isinstance(value, bool):
        return f"must be True or False, got {number_text(value)} ({_type_name(value)})"
    return None


def _check_disabled(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return f"must be a reason string or None, got {number_text(value)} ({_type_name(value)})"
    if not value.strip():
        return "must be a non-empty reason string (or None for enabled)"
    return None


def _check_min_gpus(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be a whole number of GPUs, got {number_text(value)} ({_type_name(value)})"
    if value < 1:
        return f"must be at least 1 GPU, got {number_text(value)}"
    if value > MAX_GPUS:
        return f"must be at most {MAX_GPUS} GPUs, got {number_text(value)}"
    return None


def _check_quarantined(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return (
            f"must be a reason string (or an issue URL) or None, got {number_text(value)} "
            f"({_type_name(value)})"
        )
    if not value.strip():
        return "must be a non-empty reason string (or an issue URL), or None"
    return None


def _check_suite_part(value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, got {number_text(value)} ({_type_name(value)})"
    if not value.strip():
        return "must be a non-empty string: it is part of the suite name"
    return None


def _check_ignored(value: object) -> str | None:
    return None  # any literal: the argument has no effect here


_CHECKS = {
    "est_time": _check_est_time,
    "suite": _check_suite,
    "nightly": _check_nightly,
    "disabled": _check_disabled,
    MIN_GPUS: _check_min_gpus,
    QUARANTINED: _check_quarantined,
}
_EXPECTED = {
    "est_time": "a positive number of seconds",
    "suite": "a string",
    "nightly": "True or False",
    "disabled": "a reason string or None",
    MIN_GPUS: "a whole number of GPUs",
    QUARANTINED: "a reason string or None",
}


def registration_value_problem(name: str, value: object) -> str | None:
    """Why ``value`` is no valid ``name`` (est_time, suite, nightly, disabled, min_gpus,
    quarantined) of a registration, else None: the check a marker argument passes, applied to a cached value."""
    check = _CHECKS.get(name)
    return None if check is None else check(value)


def _checker(name: str, syntax: RegistrationSyntax) -> Callable[[object], str | None]:
    if name in _CHECKS:
        return _CHECKS[name]
    return _check_suite_part if name in syntax.template_fields else _check_ignored


def _expected(name: str, syntax: RegistrationSyntax) -> str:
    if name in _EXPECTED:
        return _EXPECTED[name]
    return "a string" if name in syntax.template_fields else "a constant"
