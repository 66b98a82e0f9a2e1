"""The public face of the benchmark framework.

Usage (a ``bench_*.py`` file)::

    from jit_kernel.benchmark import marker

    @marker.parametrize("size", [2**n for n in range(10, 25)], ci_vals=[4096, 2**22])
    @marker.benchmark("impl", ["jit", "torch"])
    def benchmark(size: int, impl: str):
        src = create_random(size)
        return marker.do_bench(FN_MAP[impl], input_args=(src, 2.0), graph_clone_args=(0,))

    if __name__ == "__main__":
        benchmark.run()

The manual is docs/benchmarks.md.
"""

from jit_kernel.benchmark.results import BenchResult, BenchSkip, skip
from jit_kernel.benchmark.runner import Benchmark, benchmark
from jit_kernel.benchmark.sweep import BenchmarkDefinitionError, parametrize
from jit_kernel.benchmark.timing import DoBenchError, do_bench, make_input_sets

__all__ = [
    "BenchResult",
    "BenchSkip",
    "Benchmark",
    "BenchmarkDefinitionError",
    "DoBenchError",
    "benchmark",
    "do_bench",
    "make_input_sets",
    "parametrize",
    "skip",
]
