"""What a registration call may look like in one repository: marker names, and how a suite is named.

Built in: the ``register_<backend>_ci`` markers of :mod:`ci_runner.markers`, the positional
arguments ``est_time, suite, nightly, disabled`` and the keywords ``min_gpus`` and
``quarantined``. A catalog can add
(see :func:`parse_syntax`):

* ``suite-template = "{stage}-test-{runner_config}"``: the fields become keyword arguments that
  compose the suite name, as an alternative to ``suite=`` (SGLang's ``stage=`` +
  ``runner_config=``);
* ``[tool.ci-runner.extra-markers]``: more marker functions, each with its backend
  (``register_mlx_ci = "mlx"``);
* ``ignored-arguments = ["in_process_group"]``: keyword arguments that are accepted (they must
  still be literals) and have no effect here.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field

from ci_runner.markers import MARKER_BACKENDS, MARKER_PARAMETERS

MIN_GPUS = "min_gpus"
QUARANTINED = "quarantined"
BUILTIN_KEYWORDS: tuple[str, ...] = (MIN_GPUS, QUARANTINED)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_BACKEND = re.compile(r"[a-z][a-z0-9_]*\Z")


class SyntaxConfigError(ValueError):
    """A registration-syntax key of the catalog is malformed (message names the key)."""


@dataclass(frozen=True)
class SuiteTemplate:
    """``"{stage}-test-{runner_config}"``: literal text and named fields, in order."""

    text: str
    parts: tuple[tuple[str, str | None], ...]  # (literal text, field name or None)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.parts if name is not None)

    def compose(self, values: Mapping[str, str]) -> str:
        """The suite name for ``values`` (one string per field)."""
        return "".join(text + (values[name] if name else "") for text, name in self.parts)

    def decompose(self, suite: str) -> dict[str, str] | None:
        """Field values that compose ``suite`` (the shortest leading fields), or None."""
        pattern = "".join(
            re.escape(text) + (f"(?P<{name}>.+?)" if name else "") for text, name in self.parts
        )
        match = re.fullmatch(pattern, suite)
        return match.groupdict() if match else None

    def describe(self) -> str:
        """``'{stage}-test-{runner_config}'``."""
        return repr(self.text)


def parse_template(text: str, reserved: tuple[str, ...] = ()) -> SuiteTemplate:
    """Parse a ``suite-template``; fields must be plain names, distinct and not ``reserved``."""
    try:
        pieces = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise SyntaxConfigError(f"suite-template {text!r} is not a valid template: {exc}") from None
    parts: list[tuple[str, str | None]] = []
    for literal, name, spec, conversion in pieces:
        if name is None:
            parts.append((literal, None))
            continue
        if not _IDENTIFIER.match(name):
            raise SyntaxConfigError(
                f"suite-template {text!r}: field {{{name}}} must be a keyword argument name "
                "such as {stage}"
            )
        if spec or conversion:
            raise SyntaxConfigError(
                f"suite-template {text!r}: field {{{name}}} takes no format spec or conversion"
            )
        if name in reserved:
            raise SyntaxConfigError(
                f"suite-template {text!r}: field {{{name}}} is already an argument of the "
                f"markers ({', '.join(reserved)})"
            )
        if any(existing == name for _, existing in parts):
            raise SyntaxConfigError(f"suite-template {text!r}: field {{{name}}} appears twice")
        parts.append((literal, name))
    template = SuiteTemplate(text, tuple(parts))
    if not template.fields:
        raise SyntaxConfigError(
            f"suite-template {text!r} has no {{field}}: name the keyword arguments that compose "
            'the suite, e.g. "{stage}-test-{runner_config}"'
        )
    return template


@dataclass(frozen=True)
class RegistrationSyntax:
    """The markers and arguments that registrations of one repository may use."""

    markers: Mapping[str, str] = field(default_factory=lambda: dict(MARKER_BACKENDS))
    suite_template: SuiteTemplate | None = None
    ignored_arguments: tuple[str, ...] = ()

    @property
    def positional(self) -> tuple[str, ...]:
        return MARKER_PARAMETERS

    @property
    def template_fields(self) -> tuple[str, ...]:
        return self.suite_template.fields if self.suite_template else ()

    @property
    def arguments(self) -> tuple[str, ...]:
        """Every accepted argument name: the positional ones, then the keyword-only ones."""
        return (
            *MARKER_PARAMETERS,
            *BUILTIN_KEYWORDS,
            *self.template_fields,
            *self.ignored_arguments,
        )

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.markers.values())))

    def marker_for(self, backend: str) -> str:
        """The marker function of a backend, e.g. "cuda" -> "register_cuda_ci"."""
        builtin = f"register_{backend}_ci"
        if self.markers.get(builtin) == backend:
            return builtin
        for name, hw in self.markers.items():
            if hw == backend:
                return name
        return builtin


DEFAULT_SYNTAX = RegistrationSyntax()


def parse_syntax(
    table: Mapping[str, object], where: str, runner_markers: Mapping[str, str] | None = None
) -> RegistrationSyntax:
    """The registration syntax declared in a ``[tool.ci-runner]`` table (raises with ``where``);
    ``runner_markers``: more markers the repository's own runner reads (``suites-from``)."""
    markers = dict(MARKER_BACKENDS)
    extra = table.get("extra-markers", {})
    if not isinstance(extra, dict):
        raise SyntaxConfigError(
            f"{where}: extra-markers must be a table of marker = backend, e.g. "
            '[tool.ci-runner.extra-markers] register_mlx_ci = "mlx"'
        )
    for name, backend in extra.items():
        if not _IDENTIFIER.match(name):
            raise SyntaxConfigError(
                f"{where}: extra-markers: {name!r} is not a Python function name"
            )
        if name in MARKER_BACKENDS:
            raise SyntaxConfigError(
                f"{where}: extra-markers: {name} is a built-in marker (backend "
                f"{MARKER_BACKENDS[name]!r}); list only new markers"
            )
        if not isinstance(backend, str) or not _BACKEND.match(backend):
            raise SyntaxConfigError(
                f"{where}: extra-markers: {name} must name a backend in lower case "
                f"(letters, digits, _), got {backend!r}"
            )
        markers[name] = backend
    for name, backend in (runner_markers or {}).items():
        if _IDENTIFIER.match(name) and _BACKEND.match(backend):
            markers.setdefault(name, backend)
    ignored = table.get("ignored-arguments", [])
    if not isinstance(ignored, list) or not all(isinstance(a, str) for a in ignored):
        raise SyntaxConfigError(
            f"{where}: ignored-arguments must be a list of argument names, got {ignored!r}"
        )
    reserved = (*MARKER_PARAMETERS, *BUILTIN_KEYWORDS)
    for name in ignored:
        if not _IDENTIFIER.match(name):
            raise SyntaxConfigError(f"{where}: ignored-arguments: {name!r} is not an argument name")
        if name in reserved:
            raise SyntaxConfigError(
                f"{where}: ignored-arguments: {name!r} is an argument the runner reads"
            )
    if len(set(ignored)) != len(ignored):
        raise SyntaxConfigError(f"{where}: ignored-arguments lists a name twice: {ignored!r}")
    template = None
    text = table.get("suite-template")
    if text is not None:
        if not isinstance(text, str):
            raise SyntaxConfigError(f"{where}: suite-template must be a string, got {text!r}")
        try:
            template = parse_template(text, (*reserved, *ignored))
        except SyntaxConfigError as exc:
            raise SyntaxConfigError(f"{where}: {exc}") from None
    return RegistrationSyntax(markers, template, tuple(ignored))
