"""Support shared by the registered tests and the lab, outside the shipped package: the fp32
torch references of the kernels (:mod:`.references`), each kernel's benchmark definition and
every peer adapter (:mod:`.bench`, upstream SGLang's kernels in :mod:`.upstream_sglang`), the
generated repository trees of the runner's tests and benchmarks (:mod:`.tree_builder`,
:mod:`.sglang_tree`), running calls once eagerly or as a replayed CUDA graph (:mod:`.replay`),
the GPU test files' module skip (:mod:`.skip`), the custom all-reduce's checks
(:mod:`.all_reduce_checks`, with their command line ``python -m testing.all_reduce_selftest``)
and benchmark harness (:mod:`.all_reduce_harness`), and test-only kernels that fault on purpose
(:mod:`.faulty_kernel`, for the runner's crash-resume verification). It imports nothing from
``registered/``, ``benchmarks/``, ``tools/`` or ``verification/``. Import it from the repository
root."""
