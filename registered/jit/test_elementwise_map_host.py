"""host::elementwise::map's host side, on CPU tensors, without a GPU.

A module built for Hopper loads on a machine without a GPU, and map's checks run before any
CUDA call, so their outcomes can be asserted here with CPU tensors: a non-contiguous input
returns False and writes nothing; an unsupported dtype names the operation and the first input;
with one element type (add_constant) TensorMatcher names the dtype mismatch; the first tensor
checked (a CPU tensor) fails on its device, named, at the kernel's line. The results on the GPU
are registered/jit/test_add3.py's and test_scale.py's.
"""

import re
import sys

import pytest
import torch
from helpers_jit_toolchain import nvcc_missing_reason

from ci_runner import register_cpu_ci
from jit_kernel.compiler import override_arch

register_cpu_ci(est_time=30, suite="base-a-test-cpu")

pytestmark = [
    pytest.mark.skipif(nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason())),
    pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a visible GPU"),
]


@pytest.fixture(scope="module")
def modules():
    from jit_kernel.add3 import _jit_add3_module
    from jit_kernel.add_constant import _jit_add_constant_module

    with override_arch("9.0"):
        return _jit_add3_module(), _jit_add_constant_module(1)


def test_a_non_contiguous_input_returns_false_and_writes_nothing(modules):
    add3_module, add_constant_module = modules
    out = torch.full((16,), 5.0, dtype=torch.float16)
    strided = torch.zeros(32, dtype=torch.float16)[::2]
    for inputs in [(strided, out, out), (out, out, strided)]:
        assert add3_module.add3(out, *inputs) is False
    assert torch.all(out == 5.0)
    int_out = torch.full((16,), 5, dtype=torch.int32)
    int_strided = torch.zeros(32, dtype=torch.int32)[::2]
    assert add_constant_module.add_constant(int_out, int_strided) is False
    assert torch.all(int_out == 5)


def test_an_unsupported_dtype_names_the_operation_and_the_first_input(modules):
    add3_module, _ = modules
    x = torch.zeros(16, dtype=torch.int32)
    message = "add3: a has dtype int32; supported: float16, bfloat16, float32"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        add3_module.add3(x.half(), x, x, x)


def test_one_element_type_leaves_the_dtype_error_to_tensormatcher(modules):
    _, add_constant_module = modules
    src = torch.zeros(8, dtype=torch.int64)
    message = "add_constant: tensor 'src' dtype mismatch: expected int32 but got int64"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        add_constant_module.add_constant(src.int(), src)


def test_a_cpu_tensor_is_named_with_the_kernel_line(modules):
    add3_module, _ = modules
    x = torch.zeros(16, dtype=torch.bfloat16)
    with pytest.raises(
        RuntimeError,
        match=r"^add3: tensor 'a' device mismatch: expected cuda but got cpu:0; tensor: "
        r"shape=\[16\], strides=\[1\], dtype=bfloat16, device=cpu:0 \(checked at add3\.cuh:\d+\)$",
    ):
        add3_module.add3(x, x, x, x)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
