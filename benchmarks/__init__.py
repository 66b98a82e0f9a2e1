"""Benchmarks and measurements outside the shipped package, run from the repository root as
``python -m benchmarks.<name>``: the kernel bandwidth benchmark and its cases, the all-reduce
sweep, do_bench's accuracy, and the runner's own benchmarks (:mod:`.runner`)."""
