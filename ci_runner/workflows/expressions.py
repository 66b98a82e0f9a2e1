"""A small evaluator for GitHub Actions ``${{ ... }}`` expressions, enough to resolve suites.

It knows literals, context lookups (``inputs.x``, ``matrix['y']``), ``!``, ``==``, ``!=``,
``&&``, ``||``, parentheses and the functions ``fromJson``, ``toJson``, ``format``, ``contains``,
``startsWith``, ``endsWith`` and ``join``. A context the caller does not provide (``github``,
``secrets``, ``steps``, ...) and a status function (``always()``) evaluate to :data:`UNKNOWN`,
which propagates, so a caller can tell "resolved to a value" from "depends on the run".

Untrusted text is bounded: an expression longer than :data:`MAX_EXPRESSION_CHARS` or nested
deeper than :data:`MAX_DEPTH`, a function called with the wrong number of arguments (``format``
with a ``{3}`` it is not given), and a value that would grow past :data:`MAX_VALUE_CHARS` are an
:class:`ExpressionError` naming what is wrong, which the callers treat as unknown.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

MAX_EXPRESSION_CHARS = 20_000
MAX_DEPTH = 50  # parentheses, brackets, calls and ``!`` inside one another
MAX_VALUE_CHARS = 1_000_000  # a text an expression or a substitution produces


class _Unknown:
    """The value of an expression that depends on something only a real run knows."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)|(?P<str>'(?:[^']|'')*')|(?P<op>&&|\|\||==|!=|<=|>=|[!<>().\[\],*])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))"
)


class Partial(dict):
    """A context only partly known: a key it lacks is unknown, not null (``needs``, ``env``)."""


class LazyValues(Partial):
    """A partly known context whose listed keys are computed on first use (and cached)."""

    def __init__(self, factories: Mapping[str, Callable[[], Any]]):
        super().__init__()
        self.factories = dict(factories)

    def __contains__(self, key: object) -> bool:
        return key in self.factories

    def __getitem__(self, key: str) -> Any:
        if not dict.__contains__(self, key):
            dict.__setitem__(self, key, self.factories[key]())
        return dict.__getitem__(self, key)


class ExpressionError(ValueError):
    """The text is not an expression this evaluator can parse."""


def _tokens(text: str) -> list[tuple[str, str]]:
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(
            f"an expression of {len(text):,} characters, more than {MAX_EXPRESSION_CHARS:,}"
        )
    tokens, pos = [], 0
    end = len(text.rstrip())
    while pos < end:
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise ExpressionError(f"cannot parse {text.strip()!r} at {text[pos:].strip()!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


def truthy(value: Any) -> bool:
    """GitHub's truthiness: false, 0, -0, NaN, '', null are falsy."""
    if isinstance(value, float) and math.isnan(value):
        return False
    return value not in (False, 0, "", None)


def _bounded(text: str) -> str:
    if len(text) > MAX_VALUE_CHARS:
        raise ExpressionError(f"a value of more than {MAX_VALUE_CHARS:,} characters")
    return text


def to_text(value: Any) -> str:
    """How GitHub renders a value substituted into a string."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        encoded = _to_json(value)
        return "" if encoded is UNKNOWN else encoded
    return str(value)


def member(value: Any, key: Any) -> Any:
    """``value.key`` / ``value[key]``; a missing key is null, an unknown container unknown."""
    if value is UNKNOWN or key is UNKNOWN:
        return UNKNOWN
    if isinstance(value, Mapping):
        if key in value:
            return value[key]
        return UNKNOWN if isinstance(value, Partial) else None
    if (
        isinstance(value, list)
        and isinstance(key, int | float)
        and not isinstance(key, bool)
        and math.isfinite(key)
        and 0 <= int(key) < len(value)
    ):
        return value[int(key)]
    return None


def _from_json(text: Any) -> Any:
    if text is UNKNOWN:
        return UNKNOWN
    if not isinstance(text, str):
        text = to_text(text)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return UNKNOWN


def _to_json(value: Any) -> Any:
    if value is UNKNOWN or isinstance(value, Partial):
        return UNKNOWN
    try:
        return _bounded(json.dumps(value))
    except (TypeError, ValueError, RecursionError):  # holds an unknown value, or a cycle
        return UNKNOWN


_FORMAT_PART = re.compile(r"\{\{|\}\}|\{(\d{1,4})\}")


def _format(template: Any, *args: Any) -> Any:
    if template is UNKNOWN or any(a is UNKNOWN for a in args):
        return UNKNOWN

    def part(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return match.group(0)[0]  # {{ and }} stand for a brace
        index = int(match.group(1))
        if index >= len(args):
            raise ExpressionError(f"format() has no argument {{{index}}} ({len(args)} given)")
        return to_text(args[index])

    return _bounded(_FORMAT_PART.sub(part, to_text(template)))


def _join(values: Any, separator: Any = ",") -> Any:
    if values is UNKNOWN or separator is UNKNOWN:
        return UNKNOWN
    items = values if isinstance(values, list) else [values]
    return _bounded(to_text(separator).join(to_text(item) for item in items))


def _text_test(test: Callable[[str, str], bool]) -> Callable[[Any, Any], Any]:
    def call(haystack: Any, needle: Any) -> Any:
        if haystack is UNKNOWN or needle is UNKNOWN:
            return UNKNOWN
        if isinstance(haystack, list):
            return any(to_text(item).lower() == to_text(needle).lower() for item in haystack)
        return test(to_text(haystack).lower(), to_text(needle).lower())

    return call


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "fromjson": _from_json,
    "tojson": lambda v: _to_json(v),
    "format": _format,
    "contains": _text_test(lambda a, b: b in a),
    "startswith": _text_test(str.startswith),
    "endswith": _text_test(str.endswith),
    "join": _join,
}
# (fewest, most) arguments of each function GitHub has (None: any number); the status
# functions and hashFiles depend on the run, so they are unknown whatever they are given
ARITY: dict[str, tuple[int, int | None]] = {
    "fromjson": (1, 1),
    "tojson": (1, 1),
    "format": (1, None),
    "contains": (2, 2),
    "startswith": (2, 2),
    "endswith": (2, 2),
    "join": (1, 2),
    "always": (0, 0),
    "success": (0, 0),
    "failure": (0, 0),
    "cancelled": (0, 0),
    "hashfiles": (1, None),
}


class _Parser:
    def __init__(self, text: str, contexts: Mapping[str, Any]):
        self.tokens = _tokens(text)
        self.pos = 0
        self.contexts = contexts
        self.depth = 0

    def nested(self, parse: Callable[[], Any]) -> Any:
        """``parse()`` one level deeper: past :data:`MAX_DEPTH` is an error, not a crash."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"an expression nested more than {MAX_DEPTH} deep")
        try:
            return parse()
        finally:
            self.depth -= 1

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ExpressionError("unexpected end of expression")
        token = self.tokens[self.pos]
        if expected is not None and token[1] != expected:
            raise ExpressionError(f"expected {expected!r}, got {token[1]!r}")
        self.pos += 1
        return token

    def parse(self) -> Any:
        value = self.or_()
        if self.pos != len(self.tokens):
            raise ExpressionError(f"unexpected {self.peek()!r}")
        return value

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == "||":
            self.take()
            right = self.and_()
            value = UNKNOWN if value is UNKNOWN else (value if truthy(value) else right)
        return value

    def and_(self) -> Any:
        value = self.compare()
        while self.peek() == "&&":
            self.take()
            right = self.compare()
            value = UNKNOWN if value is UNKNOWN else (right if truthy(value) else value)
        return value

    def compare(self) -> Any:
        value = self.unary()
        while self.peek() in ("==", "!=", "<", ">", "<=", ">="):
            op = self.take()[1]
            right = self.unary()
            if value is UNKNOWN or right is UNKNOWN:
                value = UNKNOWN
            elif op in ("==", "!="):
                same = _loose(value) == _loose(right)
                value = same if op == "==" else not same
            else:
                value = UNKNOWN
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            value = self.nested(self.unary)
            return UNKNOWN if value is UNKNOWN else not truthy(value)
        return self.postfix()

    def postfix(self) -> Any:
        value = self.primary()
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                name = self.take()[1]
                value = UNKNOWN if name == "*" else member(value, name)
            else:
                key = self.nested(self.or_)
                self.take("]")
                value = member(value, key)
        return value

    def primary(self) -> Any:
        kind, text = self.take()
        if kind == "num":  # GitHub's numbers are doubles; float() never overflows on text
            return float(text) if "." in text or len(text) > 15 else int(text)
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if text == "(":
            value = self.nested(self.or_)
            self.take(")")
            return value
        if kind != "name":
            raise ExpressionError(f"unexpected {text!r}")
        if self.peek() == "(":
            return self.call(text)
        literals = {"true": True, "false": False, "null": None}
        if text in literals:
            return literals[text]
        return self.contexts.get(text, UNKNOWN)

    def call(self, name: str) -> Any:
        self.take("(")
        args = []
        while self.peek() != ")":
            args.append(self.nested(self.or_))
            if self.peek() == ",":
                self.take()
            elif self.peek() != ")":
                raise ExpressionError(f"expected ',' or ')' in {name}(), got {self.peek()!r}")
        self.take(")")
        fewest, most = ARITY.get(name.lower(), (0, None))
        if len(args) < fewest or (most is not None and len(args) > most):
            wanted = str(fewest) if fewest == most else f"{fewest} to {most or 'any number of'}"
            raise ExpressionError(f"{name}() takes {wanted} argument(s), got {len(args)}")
        function = FUNCTIONS.get(name.lower())
        return UNKNOWN if function is None else function(*args)


def _loose(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def evaluate(expression: str, contexts: Mapping[str, Any]) -> Any:
    """The value of one expression (the text inside ``${{ }}``); :class:`ExpressionError` when
    it cannot be parsed or is over a bound."""
    try:
        return _Parser(expression, contexts).parse()
    except RecursionError:  # a value nested too deeply to compare or render
        raise ExpressionError("a value nested too deeply") from None


def substitute(text: str, contexts: Mapping[str, Any], unknown: Callable[[str], str]) -> str:
    """``text`` with each ``${{ expr }}`` replaced by its value; ``unknown(expr)`` for the rest,
    and for every expression once the text would grow past :data:`MAX_VALUE_CHARS`."""
    grown = [len(text)]

    def replace(match: re.Match[str]) -> str:
        source = match.group(1).strip()
        try:
            value = evaluate(source, contexts)
        except ExpressionError:
            value = UNKNOWN
        shown = None if value is UNKNOWN else to_text(value)
        if shown is not None and grown[0] + len(shown) <= MAX_VALUE_CHARS:
            grown[0] += len(shown)
            return shown
        return unknown(source)

    return EXPRESSION.sub(replace, text)
