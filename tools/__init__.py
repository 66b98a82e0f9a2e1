"""Kernel tuning outside the shipped package: ``python -m tools.tune_kernels``."""
