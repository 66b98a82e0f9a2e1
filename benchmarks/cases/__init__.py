"""The kernel families of ``python -m benchmarks.bench_jit_kernels`` (interface: :mod:`.case`)."""
