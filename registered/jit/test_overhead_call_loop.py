"""The host-overhead loop (``testing/bench/case.py``): each call written out with its constants.

``CallLoop`` compiles one loop per callable that calls ``fn(a0, a1, ..., name=kw_name)``; these
tests check, on the CPU, that every call gets the inputs, the ``Call``'s extra positional
arguments and its keywords in order, that a plain callable gets the inputs alone, and that
the loop runs exactly the number of calls asked for.
"""

import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

torch = pytest.importorskip("torch")  # the definitions import torch
from testing.bench.case import Call, CallLoop  # noqa: E402


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[tuple, dict]] = []

    def __call__(self, *args, **kwargs) -> None:
        self.calls.append((args, kwargs))


def test_call_is_written_out_with_constants_and_keywords():
    recorder = Recorder()
    loop = CallLoop(Call(recorder, (1e-6,), {"is_neox": True}), ("q", "k"))
    loop.run(3)
    assert recorder.calls == [(("q", "k", 1e-6), {"is_neox": True})] * 3


def test_plain_callable_gets_the_inputs_alone():
    recorder = Recorder()
    loop = CallLoop(recorder, ("x",))
    loop.run(0)
    assert recorder.calls == []
    loop.run(2)
    assert recorder.calls == [(("x",), {})] * 2


def test_each_callable_gets_a_loop_of_its_own():
    first = CallLoop(Call(Recorder()), ("x",))
    second = CallLoop(Call(Recorder()), ("x",))
    assert first._loop.__code__ is not second._loop.__code__


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
