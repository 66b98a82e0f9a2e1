"""The command line, on top of every stage: ``run_suite.py`` (:mod:`.command`) and its flags
(:mod:`.arguments`). ``ci_runner.cli:main`` is the ``run-suite`` console script."""

from ci_runner.cli.command import main

__all__ = ["main"]
