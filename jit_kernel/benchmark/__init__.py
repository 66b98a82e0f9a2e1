"""Kernel benchmarks: the marker framework (``marker``) and tensor helpers (``utils``).

Write a benchmark with :mod:`jit_kernel.benchmark.marker`; the manual is docs/benchmarks.md.
Inside the package data flows one way: sweep -> runner -> report -> table / export (no module
imports one that imports it back; registered/jit/test_bench_marker_imports.py checks it). A
stored result is read back by document and used by compare and plot, which ``python -m
jit_kernel.benchmark`` (cli) runs; none of them imports the measuring stages.
"""
