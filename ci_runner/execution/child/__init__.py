"""The child bootstrap: the directory the runner puts first on a test file's ``PYTHONPATH``.

Its modules run inside the test's processes, under their own top-level names, so they use the
standard library only and never import ``ci_runner``: ``sitecustomize`` (start-up: stack dumps,
the unittest hook, then the ``sitecustomize`` it shadows), :mod:`.ci_runner_case_record` (the
case record's format and writer), :mod:`.ci_runner_unittest_hook` and
:mod:`.ci_runner_pytest_plugin` (``-p ci_runner_pytest_plugin``), :mod:`.ci_runner_case_select`
(the cases the runner asks to run) and :mod:`.ci_runner_cuda_check` (a process whose CUDA
context is lost ends after the case that lost it) and :mod:`.ci_runner_case_context` (under
``--record-deps``, each case's code is measured under its own coverage context). The runner reads what they write with
:mod:`ci_runner.execution.case_record` and :mod:`ci_runner.execution.stacks`, and writes the
selection with :mod:`ci_runner.execution.case_selection`.
"""

from pathlib import Path

CHILD_DIR = Path(__file__).resolve().parent
PYTEST_PLUGIN = "ci_runner_pytest_plugin"
