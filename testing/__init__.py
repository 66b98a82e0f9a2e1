"""Test support outside the shipped package: the fp32 torch references of the kernels
(:mod:`.references`), running calls once eagerly or as a replayed CUDA graph (:mod:`.replay`), the GPU test files' module skip (:mod:`.skip`) and the custom all-reduce's
checks (:mod:`.all_reduce_checks`) with their command line (``python -m
testing.all_reduce_selftest``), and test-only kernels that fault on purpose
(:mod:`.faulty_kernel`, for the runner's crash-resume verification). Import it from the
repository root."""
