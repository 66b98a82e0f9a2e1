"""cache_once: memoization that is thread-safe, keyword-order-insensitive, per arch, compilable."""

import sys
import threading
import time

import pytest
import torch

from ci_runner import register_cpu_ci
from jit_kernel.compiler import override_arch
from jit_kernel.wrapper import cache_once

register_cpu_ci(est_time=8, suite="base-a-test-cpu")


def test_memoizes_and_exposes_wrapped():
    calls = []

    @cache_once
    def make(a, b=0):
        calls.append((a, b))
        return object()

    first = make(1, b=2)
    assert make(1, b=2) is first
    assert make(2) is not first
    assert calls == [(1, 2), (2, 0)]
    assert make.__wrapped__(1, b=2) is not first
    assert make.__name__ == "make"


def test_keyword_order_does_not_matter():
    @cache_once
    def make(**kwargs):
        return object()

    assert make(x=1, y=2) is make(y=2, x=1)


def test_exceptions_are_not_cached():
    attempts = []

    @cache_once
    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first call fails")
        return "ok"

    with pytest.raises(RuntimeError, match="first call fails"):
        flaky()
    assert flaky() == "ok"
    assert len(attempts) == 2


def test_unhashable_arguments_raise_type_error():
    @cache_once
    def make(value):
        return value

    with pytest.raises(TypeError, match="unhashable"):
        make([1, 2])


def test_concurrent_first_calls_run_once():
    calls = []
    start = threading.Barrier(8)

    @cache_once
    def slow(key):
        calls.append(key)
        time.sleep(0.2)
        return object()

    results = []

    def worker():
        start.wait()
        results.append(slow("k"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == ["k"]
    assert len({id(result) for result in results}) == 1


def test_different_keys_do_not_wait_for_each_other():
    @cache_once
    def slow(key):
        time.sleep(0.3)
        return key

    begin = time.perf_counter()
    threads = [threading.Thread(target=slow, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert time.perf_counter() - begin < 1.0


def test_each_target_arch_gets_its_own_entry():
    @cache_once
    def module_for(name):
        return object()

    with override_arch("9.0"):
        hopper = module_for("scale")
        assert module_for("scale") is hopper
    with override_arch("8.0"):
        ampere = module_for("scale")
    assert ampere is not hopper


def test_cache_clear():
    @cache_once
    def make():
        return object()

    first = make()
    make.cache_clear()
    assert make() is not first


def test_works_under_torch_compile():
    calls = []

    @cache_once
    def factor_for(n: int) -> float:
        calls.append(n)
        return float(n) * 0.5

    def body(x: torch.Tensor) -> torch.Tensor:
        return x * factor_for(4)

    compiled = torch.compile(body, backend="eager")
    x = torch.ones(3)
    assert torch.equal(compiled(x), x * 2.0)
    assert torch.equal(compiled(x), x * 2.0)
    assert calls == [4]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
