"""Benchmarks of the test runner itself (discovery, planning, overhead, GPU slots)."""
