"""Building the variants' modules in child processes, and their registers and spills."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from tools.tune.variants import FAMILIES, ModuleSpec, Variant, variant_module

REPO_ROOT = Path(__file__).resolve().parents[2]

BUILD_CHILD = r"""
import json, sys
spec, arch = json.loads(sys.argv[1]), sys.argv[2]
from jit_kernel.compiler import build_only, load_jit, override_arch
with override_arch(arch), build_only():
    result = load_jit(*spec["markers"], cuda_files=spec["cuda_files"],
                      cuda_wrappers=[tuple(w) for w in spec["wrappers"]])
print("TUNE_BUILD " + json.dumps({"path": str(result.path), "built": bool(result.built)}))
"""


@dataclass
class BuildOutcome:
    status: str  # "built", "cached", "failed", "skipped"
    seconds: float = 0.0
    path: str = ""
    error: str = ""


class Builder:
    """Builds modules in child processes, ``jobs`` at a time; ``stop`` kills what still runs.

    Each child runs in its own session, so killing its process group also ends the ninja and
    nvcc it started (and nothing else).
    """

    def __init__(self, specs: list[ModuleSpec], arch: str, jobs: int, log_dir: Path) -> None:
        self.pending: deque[ModuleSpec] = deque(specs)
        self.running: dict[str, tuple[subprocess.Popen[bytes], float, Path, ModuleSpec]] = {}
        self.results: dict[str, BuildOutcome] = {}
        self.arch = arch
        self.jobs = max(1, jobs)
        self.log_dir = log_dir
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.stopped = False
        self.thread = threading.Thread(target=self._loop, name="tune-builder", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _spawn(self, spec: ModuleSpec) -> None:
        log = self.log_dir / f"{spec.name}.log"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-c", BUILD_CHILD, json.dumps(spec.as_json()), self.arch],
                cwd=REPO_ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.running[spec.name] = (proc, time.perf_counter(), log, spec)

    def _reap(self) -> None:
        for name, (proc, started, log, _) in list(self.running.items()):
            code = proc.poll()
            if code is None:
                continue
            seconds = time.perf_counter() - started
            text = log.read_text(errors="replace")
            match = re.search(r"^TUNE_BUILD (.*)$", text, re.MULTILINE)
            if code == 0 and match:
                info = json.loads(match.group(1))
                status = "built" if info["built"] else "cached"
                self.results[name] = BuildOutcome(status, seconds, info["path"])
            else:
                self.results[name] = BuildOutcome("failed", seconds, error=_tail(text, 40))
            del self.running[name]

    def _loop(self) -> None:
        while True:
            with self.lock:
                if self.stopped:
                    return
                self._reap()
                while self.pending and len(self.running) < self.jobs:
                    self._spawn(self.pending.popleft())
                if not self.pending and not self.running:
                    self.done.set()
                    return
            time.sleep(0.1)

    def wait(self, deadline: float | None) -> bool:
        """Wait until every build ended or ``deadline`` (perf_counter) passed; True if all ended."""
        timeout = None if deadline is None else max(0.0, deadline - time.perf_counter())
        return self.done.wait(timeout)

    def stop(self, reason: str) -> None:
        with self.lock:
            self.stopped = True
            self._reap()
            for name, (proc, started, _, _) in self.running.items():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the child's own session (its pid)
                proc.wait()
                self.results[name] = BuildOutcome(
                    "skipped", time.perf_counter() - started, error=reason
                )
            self.running.clear()
            while self.pending:
                self.results[self.pending.popleft().name] = BuildOutcome("skipped", error=reason)
            self.done.set()

    def progress(self) -> str:
        with self.lock:
            ended = len(self.results)
            return f"{ended} ended, {len(self.running)} running, {len(self.pending)} queued"


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def build_order(variants: list[Variant], pdl: bool) -> list[ModuleSpec]:
    """Unique modules, interleaving the families by grid position (baselines first)."""
    by_family: dict[str, list[Variant]] = {}
    for variant in variants:
        by_family.setdefault(variant.family.name, []).append(variant)
    order: list[ModuleSpec] = []
    seen: set[str] = set()
    for index in range(max((len(v) for v in by_family.values()), default=0)):
        for family in FAMILIES:
            group = by_family.get(family, [])
            if index >= len(group):
                continue
            spec = variant_module(group[index], pdl)
            if spec.name not in seen:
                seen.add(spec.name)
                order.append(spec)
    return order


def find_cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "cuobjdump").is_file():
            return str(Path(root) / "bin" / "cuobjdump")
    return None


def resource_usage(cuobjdump: str, library: str) -> list[tuple[str, int, int, int]]:
    """(kernel, registers, stack bytes, local bytes) of every kernel in ``library``."""
    try:
        out = subprocess.run(
            [cuobjdump, "-res-usage", library], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = []
    for name, regs, stack, local in re.findall(
        r"Function (\S+):\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", out
    ):
        rows.append((_short_kernel_name(name) or name, int(regs), int(stack), int(local)))
    return rows


def _short_kernel_name(mangled: str) -> str:
    """``act_and_mul_kernel<bf16, SiluOp, 16>``-like text from a mangled name (best effort)."""
    try:
        text = subprocess.run(
            ["c++filt"], input=mangled, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = text.replace("(anonymous namespace)::", "").replace("__nv_bfloat16", "bf16")
    text = text.replace("__half", "fp16")
    return re.sub(r"\(.*\)$", "", text)
