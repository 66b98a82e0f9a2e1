"""Repository maintenance behind ``scripts/``: lints, the aggregate JUnit check, est_time upkeep.

Each module has a ``main(argv)`` that the matching thin script in ``scripts/`` calls. None of them
imports torch or a test file.
"""
