"""Static discovery internals: one file's syntax tree (:mod:`.scan`, :mod:`.entry_point`) and
registrations against the suite catalog (:mod:`.suites`). The public API is
:mod:`ci_runner.collector`.
"""
