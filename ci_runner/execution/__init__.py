"""Stage 5, execution: running one shard's files, each in its own process session.

* :mod:`.shard`: :func:`execute_shard`, the entry point: files, plan context, options, listener;
* :mod:`.options`: :class:`ExecutionOptions`, how files run (built once by the CLI);
* :mod:`.listener`: :class:`ShardListener`, what the executor tells about the run (the reports
  implement it; the CLI connects them);
* :mod:`.shard_runner`: the loop handing files to free GPU slots, fail-fast and stops;
* :mod:`.file_runner`: one file's attempts; :mod:`.process_tree` (with :mod:`.cgroup_v2`,
  :mod:`.process_owners` and :mod:`.proc_table`), :mod:`.timeouts`, :mod:`.retry`,
  :mod:`.gpu_slots`, :mod:`.signals`, :mod:`.pytest_results`, :mod:`.captured_output`: their
  parts.

The return value of :func:`execute_shard` is the process exit code. The three names below load
on first use, so a dry run (which imports :mod:`.options` and :mod:`.gpu_slots` for its flags)
never loads psutil and junitparser, which only running files needs.
"""

from ci_runner.lazy_exports import lazy_exports

_EXPORTS = {
    "ExecutionOptions": "ci_runner.execution.options",
    "ShardListener": "ci_runner.execution.listener",
    "execute_shard": "ci_runner.execution.shard",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
