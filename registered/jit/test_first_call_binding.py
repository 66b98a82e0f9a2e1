"""The wrapper helpers: FirstCallBinding / bind_export, jit_module and raise_argument_error.

On the CPU with a fake module: the first call checks the tensor, builds once with the tensor's
device current and rebinds the global, so later calls reach the export directly; on a machine
whose GPUs differ in architecture it never rebinds and keeps one export per device; a CPU
tensor, a non-tensor or a failing build leave the binding in place for the next call. The real
wrappers are checked too: their globals start as bindings and a CPU tensor or a list raises a
clear error before anything is compiled. ``bind_export`` rebinds whichever global holds it,
``jit_module`` names, declares and builds the usual getter, and ``raise_argument_error`` reads the
expected types from the wrapper's own annotations.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from dataclasses import dataclass, field

import pytest

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

torch = pytest.importorskip("torch")
tvm_ffi = pytest.importorskip("tvm_ffi")  # the wrapper modules import jit_kernel.compiler

from jit_kernel.wrapper import (  # noqa: E402
    FirstCallBinding,
    KernelTable,
    bind_export,
    jit_module,
    raise_argument_error,
    rebind_global,
)
from jit_kernel.wrapper import binding as wrapper_args  # noqa: E402
from jit_kernel.wrapper.registry import registered_specs  # noqa: E402


@dataclass
class FakeCudaTensor:
    """What the binding reads from a tensor: is_cuda, device and get_device()."""

    index: int = 0
    is_cuda: bool = True

    @property
    def device(self) -> str:
        return f"cuda:{self.index}" if self.is_cuda else "cpu"

    def get_device(self) -> int:
        return self.index if self.is_cuda else -1


@dataclass
class FakeModule:
    """A module whose export records its calls and returns the device it was built for."""

    device: int
    calls: list[tuple] = field(default_factory=list)

    def kernel(self, *args):
        self.calls.append(args)
        return self.device


class Builder:
    """``build()``: a FakeModule for the device current at build time; counts the builds."""

    def __init__(self) -> None:
        self.current = 0
        self.built: list[FakeModule] = []
        self.fail_next = False

    def __call__(self) -> FakeModule:
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("nvcc failed")
        module = FakeModule(self.current)
        self.built.append(module)
        return module


@pytest.fixture
def builder(monkeypatch: pytest.MonkeyPatch) -> Builder:
    build = Builder()

    def device_context(device: str):
        build.current = int(device.split(":")[1])
        return contextlib.nullcontext()

    monkeypatch.setattr(torch.cuda, "device", device_context)
    return build


def one_arch(monkeypatch: pytest.MonkeyPatch, value: bool) -> None:
    monkeypatch.setattr(wrapper_args, "_all_devices_share_one_arch", lambda: value)


def bound_in(namespace: dict, builder: Builder, position: int) -> FirstCallBinding:
    """A binding stored as namespace["_kernel"], rebinding that entry; x is args[position]."""
    binding = FirstCallBinding(
        builder,
        "kernel",
        op="op",
        tensor_arg=(position, "x"),
        rebind=rebind_global(namespace, "_kernel"),
    )
    namespace["_kernel"] = binding
    return binding


def test_first_call_builds_once_and_rebinds_the_global(builder, monkeypatch):
    one_arch(monkeypatch, True)
    namespace: dict = {}
    bound_in(namespace, builder, position=1)
    x = FakeCudaTensor(0)
    assert namespace["_kernel"]("out", x, 1.5) == 0
    assert len(builder.built) == 1
    export = namespace["_kernel"]
    assert export == builder.built[0].kernel  # the global is now the export itself
    export("out", x, 2.5)
    assert builder.built[0].calls == [("out", x, 1.5), ("out", x, 2.5)]
    assert len(builder.built) == 1


def test_mixed_architectures_keep_one_export_per_device(builder, monkeypatch):
    one_arch(monkeypatch, False)
    namespace: dict = {}
    binding = bound_in(namespace, builder, position=0)
    assert binding(FakeCudaTensor(1)) == 1
    assert binding(FakeCudaTensor(0)) == 0
    assert binding(FakeCudaTensor(1)) == 1
    assert namespace["_kernel"] is binding  # never rebound
    assert [module.device for module in builder.built] == [1, 0]  # one build per device


def test_cpu_tensor_non_tensor_and_failed_build_leave_the_binding(builder, monkeypatch):
    one_arch(monkeypatch, True)
    namespace: dict = {}
    binding = bound_in(namespace, builder, position=0)
    with pytest.raises(RuntimeError, match=r"^op: x must be a CUDA tensor, got device cpu$"):
        binding(FakeCudaTensor(is_cuda=False))
    with pytest.raises(AttributeError):  # the wrapper turns this into a TypeError naming x
        binding([1.0, 2.0])
    builder.fail_next = True
    with pytest.raises(RuntimeError, match="nvcc failed"):
        binding(FakeCudaTensor(0))
    assert builder.built == [] and namespace["_kernel"] is binding
    assert binding(FakeCudaTensor(0)) == 0  # the next call builds and binds
    assert namespace["_kernel"] == builder.built[0].kernel


def test_kernel_table_keys_by_value(builder, monkeypatch):
    one_arch(monkeypatch, True)
    modules: dict = {}

    def build(key: int) -> FakeModule:
        modules[key] = FakeModule(key)
        return modules[key]

    table = KernelTable(build, "kernel", "op", "x")
    x = FakeCudaTensor(0)
    assert table.get(7) is None
    assert table.miss(7, x)(x) == 7
    assert table.get(7) == modules[7].kernel and table.get(8) is None
    with pytest.raises(RuntimeError, match=r"^op: x must be a CUDA tensor, got device cpu$"):
        table.miss(8, FakeCudaTensor(is_cuda=False))
    assert 8 not in modules


def test_bind_export_rebinds_the_global_that_holds_it(builder, monkeypatch):
    one_arch(monkeypatch, True)
    namespace: dict = {}
    namespace["_kernel"] = binding = bind_export(namespace, builder, "kernel", tensor_arg=(0, "x"))
    namespace["other"] = "untouched"
    with pytest.raises(RuntimeError, match=r"^kernel: x must be a CUDA tensor, got device cpu$"):
        binding(FakeCudaTensor(is_cuda=False))
    assert binding(FakeCudaTensor(0)) == 0
    assert namespace == {"_kernel": builder.built[0].kernel, "other": "untouched"}
    unkept = bind_export({}, builder, "kernel", tensor_arg=(0, "x"), op="named")
    assert unkept(FakeCudaTensor(0)) == 0  # held by no global: it keeps working unbound
    with pytest.raises(RuntimeError, match=r"^named: x must be a CUDA tensor"):
        unkept(FakeCudaTensor(is_cuda=False))


def test_jit_module_names_declares_and_builds_the_getter(monkeypatch):
    from jit_kernel.wrapper import module as wrapper_module

    calls = []
    monkeypatch.setattr(wrapper_module, "is_arch_support_pdl", lambda: True)
    monkeypatch.setattr(wrapper_module, "load_jit", lambda *a, **k: calls.append((a, k)) or "mod")
    getter = jit_module("demo", "elementwise/demo.cuh", {"demo": "demo_impl", "other": "other"})
    assert getter.__name__ == "_jit_demo_module" and getter.__module__ == __name__
    assert any(spec.fn is getter and spec.args == () for spec in registered_specs())
    assert getter() == "mod" and getter() == "mod"  # built once (cache_once)
    assert calls == [
        (
            ("demo", "true"),
            {
                "cuda_files": ["elementwise/demo.cuh"],
                "cuda_wrappers": [("demo", "demo_impl<true>"), ("other", "other<true>")],
            },
        )
    ]
    quiet = jit_module("quiet", "quiet.cuh", ["quiet"], precompile=False)
    assert not any(spec.fn is quiet for spec in registered_specs())
    with pytest.raises(ValueError, match="list at least one export"):
        jit_module("none", "none.cuh", [])


def annotated(
    x: torch.Tensor,
    factor: float,
    count: int,
    flag: bool,
    name: str,
    out: torch.Tensor | None = None,
    size: int | None = None,
    free=None,
) -> None:
    """A wrapper signature with every annotation raise_argument_error understands."""


GOOD = {"x": torch.zeros(1), "factor": 1, "count": 2, "flag": True, "name": "n", "free": [1]}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"x": [1.0]}, "annotated: x must be a torch.Tensor, got list"),
        ({"factor": "2"}, "annotated: factor must be a number, got str"),
        ({"factor": True}, "annotated: factor must be a number, got bool"),
        ({"count": 2.0}, "annotated: count must be an int, got float"),
        ({"count": False}, "annotated: count must be an int, got bool"),
        ({"flag": 1}, "annotated: flag must be a bool, got int"),
        ({"name": 3}, "annotated: name must be a str, got int"),
        ({"out": (1,)}, "annotated: out must be a torch.Tensor or None, got tuple"),
        ({"size": "4"}, "annotated: size must be an int or None, got str"),
        ({"x": None, "out": 1}, "annotated: x must be a torch.Tensor, got NoneType"),  # first
    ],
)
def test_raise_argument_error_names_the_first_argument_that_does_not_fit(changes, message):
    with pytest.raises(TypeError, match=f"^{message}$") as info:
        raise_argument_error(annotated, AttributeError("inner"), {**GOOD, **changes})
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_raise_argument_error_reraises_when_every_argument_fits():
    error = TypeError("from inside the call")
    arguments = {**GOOD, "out": None, "size": 3, "unrelated": object()}
    with pytest.raises(TypeError, match=r"^from inside the call$"):
        raise_argument_error(annotated, error, arguments)
    with pytest.raises(TypeError, match=r"^custom_op: x must be a torch.Tensor, got int$"):
        raise_argument_error(annotated, error, {"x": 1}, op="custom_op")


WRAPPERS = [
    ("jit_kernel.add3", "add3", "_add3", "a", lambda f, t: f(t, t, t)),
    ("jit_kernel.rmsnorm", "rmsnorm", "_rmsnorm", "input", lambda f, t: f(t, t)),
    ("jit_kernel.fused_add_rmsnorm", "fused_add_rmsnorm", "_fused_add_rmsnorm", "input",
     lambda f, t: f(t, t, t)),
    ("jit_kernel.qknorm", "fused_inplace_qknorm", "_qknorm", "q", lambda f, t: f(t, t, t, t)),
    ("jit_kernel.rope", "apply_rope_inplace", "_rope", "q",
     lambda f, t: f(t, t, t, t, is_neox=True)),
    ("jit_kernel.scale", "scale", "_scale", "src", lambda f, t: f(t, 2.0)),
    ("jit_kernel.store_cache", "store_cache", "_store", "k", lambda f, t: f(t, t, t, t, t)),
]  # fmt: skip


@pytest.mark.parametrize(("module_name", "op", "binding", "tensor", "call"), WRAPPERS)
def test_wrappers_start_unbound_and_reject_cpu_tensors_and_lists(
    module_name, op, binding, tensor, call
):
    module = importlib.import_module(module_name)
    assert isinstance(getattr(module, binding), FirstCallBinding)  # a fresh process
    cpu = torch.zeros(4, 8, dtype=torch.bfloat16)
    with pytest.raises(
        RuntimeError, match=f"^{op}: {tensor} must be a CUDA tensor, got device cpu$"
    ):
        call(getattr(module, op), cpu)
    with pytest.raises(TypeError, match=f"^{op}: {tensor} must be a torch.Tensor, got list$"):
        call(getattr(module, op), [1.0, 2.0])
    assert isinstance(getattr(module, binding), FirstCallBinding)  # nothing was built


def test_activation_wrappers_reject_cpu_tensors_before_building():
    activation = importlib.import_module("jit_kernel.activation")

    for op in activation.OPS:
        with pytest.raises(
            RuntimeError, match=f"^{op}: input must be a CUDA tensor, got device cpu$"
        ):
            getattr(activation, op)(torch.zeros(4, 8))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
