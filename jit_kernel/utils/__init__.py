"""Public helpers for JIT kernels: building (load_jit), caching, C++ arguments and CI switches."""

from jit_kernel.utils.ci import get_ci_test_range, is_in_ci, should_run_full_tests

__all__ = ["get_ci_test_range", "is_in_ci", "should_run_full_tests"]
