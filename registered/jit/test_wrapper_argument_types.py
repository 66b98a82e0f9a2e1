"""Scalar arguments of every kernel wrapper: an int where a bool is promised, or a bool where an
int or a number is, is a TypeError naming the argument, never a silent conversion.

tvm-ffi converts between Python bools and ints on its own (an ``int64_t`` parameter takes
``True`` as 1, a ``bool`` parameter takes ``1`` or ``np.int64(3)`` as true, a ``double`` takes
``True`` as 1.0), so ``apply_rope_inplace(..., is_neox=1)`` ran as NeoX. Each wrapper checks these
arguments itself before anything touches CUDA, so every wrapper is checked here on the CPU: each
of its ``bool``, ``int`` and ``float`` parameters (read from its signature) gets the other kind,
with CPU tensors everywhere else; a valid value reaches the CUDA check instead. The launch and
probe helpers that take device indices and byte counts are held to the same rule.
"""

import importlib
import inspect
import sys
import types
import typing

import numpy as np
import pytest
import torch

import jit_kernel
from ci_runner import register_cpu_ci
from jit_kernel.all_reduce import CustomAllReduce, can_use_custom_all_reduce
from jit_kernel.distributed import run_on_gpus
from jit_kernel.distributed.peers import p2p_problems
from jit_kernel.tools.precompile import wrapper_module_names

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

# Values of the wrong kind for each promised scalar type.
WRONG = {bool: [1, 0, np.int64(1)], int: [True, False], float: [True, False]}
VALID = {bool: True, int: 1, float: 1.0}


def scalar_type(hint) -> type | None:
    """``bool``, ``int`` or ``float`` for such an annotation (optionally ``| None``)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(hint) if m is not type(None)]
        hint = members[0] if len(members) == 1 else None
    return hint if hint in WRONG else None


def kernel_wrappers() -> list:
    """Every public function of a wrapper module that takes a tensor."""
    found = []
    for name in wrapper_module_names("jit_kernel"):
        module = importlib.import_module(f"jit_kernel.{name}")  # change impact reads the prefix
        for attribute, value in vars(module).items():
            if attribute.startswith("_") or not inspect.isfunction(value):
                continue
            try:
                hints = typing.get_type_hints(value)
            except NameError:  # an annotation only for type checkers (a getter's -> Module)
                continue
            if value.__module__ == module.__name__ and torch.Tensor in hints.values():
                found.append(value)
    return found


WRAPPERS = kernel_wrappers()


def call_arguments(fn) -> dict:
    """Arguments for ``fn``: CPU tensors, and valid scalars (defaults where there are some)."""
    hints = typing.get_type_hints(fn)
    arguments = {}
    for name, parameter in inspect.signature(fn).parameters.items():
        hint = hints.get(name)
        if hint is torch.Tensor:
            arguments[name] = torch.zeros(8)
        elif parameter.default is not inspect.Parameter.empty:
            arguments[name] = parameter.default
        else:
            arguments[name] = VALID[scalar_type(hint)]
    return arguments


CASES = [
    pytest.param(fn, name, wrong, id=f"{fn.__name__}-{name}={wrong!r}")
    for fn in WRAPPERS
    for name, hint in typing.get_type_hints(fn).items()
    if scalar_type(hint) is not None
    for wrong in WRONG[scalar_type(hint)]
]


def test_every_wrapper_with_a_scalar_is_checked() -> None:
    names = {case.values[0].__name__ for case in CASES}
    assert {"apply_rope_inplace", "store_cache", "rmsnorm", "scale", "add_constant"} <= names
    assert len({(case.values[0], case.values[1]) for case in CASES}) >= 8


@pytest.mark.parametrize(("fn", "name", "wrong"), CASES)
def test_the_other_kind_of_scalar_is_a_type_error(fn, name, wrong) -> None:
    arguments = call_arguments(fn)
    with pytest.raises(RuntimeError, match="must be a CUDA tensor, got device cpu"):
        fn(**arguments)  # valid scalars: what stops the call is the CPU tensor
    arguments[name] = wrong
    with pytest.raises(TypeError, match=f"^{fn.__name__}: {name} must be (a|an) "):
        fn(**arguments)


def test_rope_is_neox_one_is_refused_before_cuda() -> None:
    q = torch.zeros(2, 1, 64)
    with pytest.raises(TypeError, match="apply_rope_inplace: is_neox must be a bool, got int"):
        jit_kernel.rope.apply_rope_inplace(q, q, torch.zeros(4, 64), torch.zeros(2), is_neox=1)


def test_communicator_and_probe_arguments() -> None:
    with pytest.raises(
        TypeError, match=r"CustomAllReduce: device must be a torch.device or an int"
    ):
        CustomAllReduce(device=True)  # before torch.distributed is even looked at
    assert not can_use_custom_all_reduce(numel=True)
    assert not can_use_custom_all_reduce(numel=1, max_bytes=True)
    assert p2p_problems([True, 1]) == ["devices must be CUDA device indices (ints), got True"]
    assert p2p_problems([0, 1.5]) == ["devices must be CUDA device indices (ints), got 1.5"]
    with pytest.raises(TypeError, match=r"run_on_gpus: devices must be CUDA device indices"):
        run_on_gpus(2, print, backend="gloo", devices=[False, True])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
