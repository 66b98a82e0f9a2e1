"""Kernel benchmarks: the marker framework (``marker``) and tensor helpers (``utils``).

Write a benchmark with :mod:`jit_kernel.benchmark.marker`; see the "Kernel benchmarks" section of README.md.
"""
