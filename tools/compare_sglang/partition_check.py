"""Our ``run_suite.py partitions`` against upstream's own ``compute_partitions.py``, workflow by
workflow, byte for byte, in three variants: in-source est_time; ``--full-parallel true``; and a
model file (measured seconds for every other file of each sized suite, a fit for every other
suite), generated here from upstream's own registrations.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tools.compare_sglang.partitions import SCRIPT
from tools.compare_sglang.upstream import Registration


@dataclass
class PartitionCheck:
    """One (workflow, variant): both outputs, equal or not."""

    workflow: str
    variant: str
    upstream: str
    ours: str
    upstream_rc: int
    ours_rc: int

    @property
    def equal(self) -> bool:
        if self.upstream_rc != 0 or self.ours_rc != 0:
            return self.upstream_rc != 0 and self.ours_rc != 0
        return self.upstream == self.ours

    @property
    def suites(self) -> int:
        return len(json.loads(self.upstream)) if self.upstream_rc == 0 and self.upstream else 0


@dataclass
class PartitionReport:
    checks: list[PartitionCheck] = field(default_factory=list)
    skipped: str = ""


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def model_file(path: Path, sized: dict[str, dict], registrations: list[Registration]) -> Path:
    """A model.json: est for every other enabled file of each sized suite (est x 1.7), and
    ``fit`` {coeff 1.1, bias 30} for every other sized suite."""
    est: dict[str, dict[str, float]] = {}
    for suite in sorted(sized):
        files = sorted({r.path for r in registrations if r.suite == suite and r.disabled is None})
        by_path = {r.path: r.est_time for r in registrations if r.suite == suite}
        est[suite] = {p: round(by_path[p] * 1.7, 1) for p in files[::2]}
    fit = {suite: {"coeff": 1.1, "bias": 30.0} for suite in sorted(sized)[::2]}
    path.write_text(json.dumps({"est": est, "fit": fit}), encoding="utf-8")
    return path


def check_partitions(
    root: Path, runner: Path, workflows: list[str], registrations: list[Registration]
) -> PartitionReport:
    """Both sides for every workflow upstream's script sizes (see the module doc)."""
    report = PartitionReport()
    if not (root / SCRIPT).is_file():
        report.skipped = f"{SCRIPT} does not exist at this commit"
        return report
    for workflow in workflows:
        base = _upstream(root, workflow, [])
        sized = json.loads(base[0]) if base[1] == 0 and base[0] else {}
        model = model_file(root / "partition-model.json", sized, registrations)
        variants = {
            "est_time": [],
            "--full-parallel true": ["--full-parallel", "true"],
            "model file": ["--partition-model-file", str(model)],
        }
        for name, extra in variants.items():
            upstream_text, upstream_rc = _upstream(root, workflow, extra)
            ours_text, ours_rc = _ours(root, runner, workflow, extra)
            report.checks.append(
                PartitionCheck(workflow, name, upstream_text, ours_text, upstream_rc, ours_rc)
            )
    return report


def _upstream(root: Path, workflow: str, extra: list[str]) -> tuple[str, int]:
    command = [sys.executable, str(root / SCRIPT), "--repo-root", str(root)]
    command += ["--output-format", "json", "--pr-test-yml", str(root / workflow), *extra]
    done = subprocess.run(command, capture_output=True, text=True, cwd=root, check=False)
    return _last_line(done.stdout), done.returncode


def _ours(root: Path, runner: Path, workflow: str, extra: list[str]) -> tuple[str, int]:
    command = [sys.executable, str(runner), "partitions", "--root", str(root)]
    command += ["--workflow", workflow, *extra]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return _last_line(done.stdout), done.returncode


def partition_lines(report: PartitionReport) -> list[str]:
    if report.skipped:
        return [f"partitions: not compared ({report.skipped})"]
    equal = [c for c in report.checks if c.equal]
    suites = sum(c.suites for c in report.checks)
    lines = [
        f"partitions: {len(equal)} of {len(report.checks)} (workflow, variant) outputs equal "
        f"to compute_partitions.py's ({suites} suite sizings)"
    ]
    for check in report.checks:
        if not check.equal:
            lines.append(
                f"  DIFFER {check.workflow} [{check.variant}]: upstream rc {check.upstream_rc} "
                f"{check.upstream[:200]!r}; ours rc {check.ours_rc} {check.ours[:200]!r}"
            )
    return lines
