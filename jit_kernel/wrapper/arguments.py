"""Argument-type errors of the kernel wrappers, read from the wrapper's own signature.

A wrapper passes its arguments straight to the tvm-ffi export, so a Python-level mistake (a
list where a tensor belongs) surfaces as an AttributeError or TypeError from inside that call.
The wrapper catches those two and calls :func:`raise_argument_error`, which compares each
argument with the wrapper's annotation and raises a TypeError naming the first that does not
fit (``add3: b must be a torch.Tensor, got list``). The happy path pays nothing for it.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import torch

#: (accepts, "what it must be") per annotation the wrappers use.
_SIMPLE: dict[Any, tuple[Callable[[Any], bool], str]] = {
    torch.Tensor: (lambda value: isinstance(value, torch.Tensor), "a torch.Tensor"),
    float: (lambda value: type(value) is not bool and isinstance(value, int | float), "a number"),
    int: (lambda value: type(value) is not bool and isinstance(value, int), "an int"),
    bool: (lambda value: type(value) is bool, "a bool"),
    str: (lambda value: isinstance(value, str), "a str"),
}


def _expectation(hint: Any) -> tuple[Callable[[Any], bool], str] | None:
    """How a value fits ``hint`` (a simple type, or one of them ``| None``); None: not checked."""
    if hint in _SIMPLE:
        return _SIMPLE[hint]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = [member for member in typing.get_args(hint) if member is not type(None)]
        if len(members) == 1 and members[0] in _SIMPLE and len(typing.get_args(hint)) == 2:
            accepts, what = _SIMPLE[members[0]]
            return (lambda value: value is None or accepts(value)), f"{what} or None"
    return None


@functools.cache
def _expectations(fn: Callable[..., Any]) -> tuple[tuple[str, Callable[[Any], bool], str], ...]:
    """(parameter, accepts, what it must be) for each annotated parameter of ``fn``, in order."""
    hints = typing.get_type_hints(fn)
    found = []
    for name in inspect.signature(fn).parameters:
        expected = _expectation(hints.get(name))
        if expected is not None:
            found.append((name, *expected))
    return tuple(found)


def raise_argument_error(
    fn: Callable[..., Any],
    error: BaseException,
    arguments: Mapping[str, object],
    *,
    op: str | None = None,
) -> NoReturn:
    """Raise a TypeError naming the first argument of ``fn`` whose value does not fit its
    annotation (``torch.Tensor``, ``float`` = any number but bool, ``int``, ``bool``, ``str``,
    each possibly ``| None``), e.g. ``scale: factor must be a number, got str``.

    ``arguments``: the values by parameter name (a wrapper passes ``locals()``); ``op`` names
    the operation (default ``fn.__name__``). When every argument fits, ``error`` was not caused
    by the caller's types and is re-raised unchanged.
    """
    for name, accepts, what in _expectations(fn):
        if name in arguments and not accepts(value := arguments[name]):
            raise TypeError(
                f"{op or fn.__name__}: {name} must be {what}, got {type(value).__name__}"
            ) from None
    raise error
