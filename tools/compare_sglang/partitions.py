"""Shard counts as upstream's CI computes them: its own ``scripts/ci/utils/compute_partitions.py``.

Upstream sizes CUDA and CPU stages from in-source ``est_time`` (or a live model file from
sglang-ci-stats, which needs the network; without it the script falls back to est_time, as here)
and each stage's ``run_timeout_minutes`` in the workflow file passed as ``--pr-test-yml``.
The script runs as a subprocess of this interpreter (it needs PyYAML), once per workflow file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ci_runner.workflows.expressions import UNKNOWN

SCRIPT = "scripts/ci/utils/compute_partitions.py"


class PartitionSizes:
    """``pr_test_yml`` -> the JSON text compute_partitions.py prints (cached), or UNKNOWN."""

    def __init__(self, root: Path):
        self.root = root
        self.results: dict[str, Any] = {}
        self.errors: dict[str, str] = {}

    def __call__(self, pr_test_yml: str) -> Any:
        if pr_test_yml not in self.results:
            self.results[pr_test_yml] = self._compute(pr_test_yml)
        return self.results[pr_test_yml]

    def _compute(self, pr_test_yml: str) -> Any:
        script = self.root / SCRIPT
        if not script.is_file():
            self.errors[pr_test_yml] = f"{SCRIPT} does not exist at this commit"
            return UNKNOWN
        command = [
            sys.executable,
            str(script),
            "--repo-root",
            str(self.root),
            "--output-format",
            "json",
            "--pr-test-yml",
            str(self.root / pr_test_yml),
        ]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.root, check=False)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            self.errors[pr_test_yml] = (
                f"{SCRIPT} --pr-test-yml {pr_test_yml}: exit {done.returncode}: {tail}"
            )
            return UNKNOWN
        try:
            json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            self.errors[pr_test_yml] = f"{SCRIPT} --pr-test-yml {pr_test_yml}: no JSON on stdout"
            return UNKNOWN
        return done.stdout.strip().splitlines()[-1]

    def sizes(self) -> dict[str, dict[str, int]]:
        """``pr_test_yml`` -> {suite: size} for every computed workflow file."""
        return {
            yml: {suite: entry["size"] for suite, entry in json.loads(text).items()}
            for yml, text in self.results.items()
            if text is not UNKNOWN
        }
