"""Upstream SGLang's own JIT kernels as a peer of ``benchmarks/bench_jit_kernels.py``.

Built from the ``sglang/kernels/jit`` folder of SGLang's published wheel, which the user
unpacks and names (``--sglang-src DIR`` or ``$BENCH_SGLANG_SRC``); none of its code is in this
repository. :mod:`.source` finds and fingerprints that folder, :mod:`.build` compiles a module
the way upstream's ``load_jit`` does (with tvm-ffi's own builder, into a cache of its own),
:mod:`.kernels` picks the kernel and template arguments the way upstream's Python wrappers do
and turns each into a peer of our cases.
"""
