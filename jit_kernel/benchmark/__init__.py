"""Kernel benchmarks: the marker framework (``marker``) and tensor helpers (``utils``).

Write a benchmark with :mod:`jit_kernel.benchmark.marker`; see ``docs/readme/50-benchmarks.md``.
"""
