"""Crash resume with a real kernel fault, on a GPU: the third of six cases loses the CUDA context.

Builds a throwaway repository (so the real suites stay green) with one cuda suite and two test
files of six cases each. Cases 1, 2, 4, 5 and 6 do real work on the GPU; case 3 runs a test-only
JIT kernel (:mod:`testing.faulty_kernel`) that writes out of bounds (an illegal memory access) in
one file and fails a device-side assert in the other. Each case counts its runs in a file. Then
it runs the tree through ``run_suite.py`` and checks what a person would check:

* each file is ``failed`` and its reason names ``test_3`` and the lost CUDA context;
* in the JUnit, ``test_3`` is an error of type ``crashed`` and the five others passed;
* every case ran exactly once (the counters): the resumed process ran only 4, 5 and 6.

Usage (on a GPU machine, from the repository root)::

    python -m verification.verify_crash_resume --out /tmp/crash-resume

It prints one line per check and the runner's ``summary:`` line, writes the console, JUnit and
timings under ``--out``, and exits 0 when every check holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[1]
SUITE = "crash-resume-gpu"
CATALOG = f"""\
[tool.ci-runner]
registered-dir = "registered"

[[tool.ci-runner.suites]]
name = "{SUITE}"
hw = "cuda"
gpus-per-file = 1
timeout-per-file = 900
"""
FAULTS = {"test_kernel_oob.py": "write_out_of_bounds", "test_kernel_assert.py": "device_assert"}


def test_file(fault: str) -> str:
    """Six cases; the third runs the faulting kernel ``fault`` of testing.faulty_kernel."""
    cases = []
    for number in range(1, 7):
        body = (
            f"    faulty_kernel.{fault}()\n"
            if number == 3
            else "    x = torch.arange(1024, device='cuda', dtype=torch.float32)\n"
            "    assert float((x * 2).sum()) == 1024 * 1023\n"
        )
        cases.append(f"def test_{number}():\n    count('{number}')\n{body}")
    return (
        textwrap.dedent(
            f"""\
        import sys
        from pathlib import Path

        import pytest
        import torch

        from ci_runner import register_cuda_ci
        from testing import faulty_kernel

        register_cuda_ci(est_time=60, suite="{SUITE}")


        def count(name):
            counter = Path(__file__).with_name(f"{{Path(__file__).stem}}.{{name}}.count")
            counter.write_text(str(int(counter.read_text()) + 1 if counter.exists() else 1))


        """
        )
        + "\n\n".join(cases)
        + '\n\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__, "-q"]))\n'
    )


def build_tree(tree: Path) -> None:
    (tree / "registered").mkdir(parents=True, exist_ok=True)
    (tree / "pyproject.toml").write_text(CATALOG)
    for name, fault in FAULTS.items():
        (tree / "registered" / name).write_text(test_file(fault))
    for counter in (tree / "registered").glob("*.count"):
        counter.unlink()


def junit_cases(path: Path) -> dict[str, dict[str, str]]:
    """file -> case name -> "passed" or the type of its error/failure; plus the properties."""
    found: dict[str, dict[str, str]] = {}
    for suite in ElementTree.parse(path).getroot().iter("testsuite"):
        cases = {}
        for case in suite.iter("testcase"):
            bad = next((c for c in case if c.tag in ("error", "failure")), None)
            cases[case.get("name", "")] = "passed" if bad is None else (bad.get("type") or bad.tag)
        props = {p.get("name"): p.get("value", "") for p in suite.iter("property")}
        found[props.get("path", suite.get("name", ""))] = {
            **cases,
            "@status": props.get("status", ""),
            "@reason": props.get("reason", ""),
        }
    return found


def check(tree: Path, out: Path) -> list[tuple[bool, str]]:
    results = []
    report = junit_cases(out / "junit.xml")
    for name in FAULTS:
        path = f"registered/{name}"
        cases = report.get(path, {})
        status, reason = cases.pop("@status", ""), cases.pop("@reason", "")
        results.append((status == "failed", f"{path}: status {status!r} (expected 'failed')"))
        named = "test_3" in reason and "CUDA context was lost" in reason
        results.append((named, f"{path}: reason names test_3 and the lost CUDA context: {reason}"))
        expected = {**{f"test_{i}": "passed" for i in (1, 2, 4, 5, 6)}, "test_3": "crashed"}
        results.append((cases == expected, f"{path}: cases {cases} (expected {expected})"))
        stem = name.removesuffix(".py")
        counts = {
            p.name.split(".")[1]: int(p.read_text())
            for p in (tree / "registered").glob(f"{stem}.*.count")
        }
        once = {str(i): 1 for i in range(1, 7)}
        results.append((counts == once, f"{path}: runs per case {counts} (expected one each)"))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=Path("crash-resume"), help="output directory")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    tree = out / "tree"
    build_tree(tree)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    command = [
        sys.executable, str(ROOT / "run_suite.py"), "--root", str(tree), "--hw", "cuda",
        "--suite", SUITE, "--continue-on-error", "--junit-xml", str(out / "junit.xml"),
        "--timings-out", str(out / "timings.jsonl"),
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    (out / "console.txt").write_text(proc.stdout + proc.stderr)
    print(f"run_suite.py exited {proc.returncode} (expected 1); console: {out / 'console.txt'}")
    summary = next((x for x in reversed(proc.stdout.splitlines()) if x.startswith("summary:")), "")
    print(summary or "no summary line")
    if not (out / "junit.xml").is_file():
        print("FAILED: no JUnit report was written")
        return 1
    results = [(proc.returncode == 1, "run_suite.py exit code 1"), *check(tree, out)]
    results.append(
        (summary == "summary: 10 passed, 2 failed, 0 skipped", f"summary line: {summary}")
    )
    for ok, line in results:
        print(f"{'ok  ' if ok else 'FAIL'} {line}")
    timings = [json.loads(x) for x in (out / "timings.jsonl").read_text().splitlines() if x]
    for row in timings:
        print(f"timings: {row['path']} {row['status']} in {row['elapsed']}s: {row['reason']}")
    verdict = all(ok for ok, _ in results)
    print("verify_crash_resume: " + ("OK" if verdict else "FAILED"))
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
