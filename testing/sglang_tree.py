"""Generate a registered tree shaped like SGLang's ``test/registered/`` (not a test file).

Every registration shape of such a tree appears: ``suite=`` and ``stage=`` + ``runner_config=``
(about 40 % of registrations), positional arguments, ``suite=""`` disabled placeholders, helper
files registered with ``est_time=0`` whose registrations are all disabled and that have no
``__main__`` block, several registrations per file with different est_times and backends,
markers imported from ``sglang.test.ci.ci_register`` (one backend, ``mlx``, that ours lacks),
late and multi-line calls, files not named ``test_*``, and comments, docstrings and strings that
mention markers.

The generator records what it wrote, so :func:`anchor_selection` computes what SGLang's runner
selects from SGLang's documented rules (``test/run_suite.py`` + ``ci_register.py``: every ``*.py``
but ``__init__.py``/``conftest.py``; module-level ``register_<hw>_ci`` calls; ``effective_suite``
= ``f"{stage}-test-{runner_config}"`` when both are set, else ``suite``; a registration is
selected when backend, effective suite and ``nightly`` all match; disabled ones are listed, not
run) without parsing anything and without any code of ours.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from pathlib import Path

MARKER_MODULE = "sglang.test.ci.ci_register"

# (backend, how it is named, nightly flag, weight). Composed names are (stage, runner_config).
SUITES: list[tuple[str, str | tuple[str, str], bool, int]] = [
    ("cuda", ("base-b", "1-gpu-large"), False, 16),
    ("cuda", ("base-a", "1-gpu-small"), False, 5),
    ("cuda", ("base-b", "2-gpu-large"), False, 4),
    ("cuda", ("base-c", "4-gpu-h100"), False, 3),
    ("cuda", ("base-b-kernel-unit", "1-gpu-large"), False, 4),
    ("cuda", ("nightly", "1-gpu-large"), False, 3),  # newest nightly style: no nightly=True
    ("cuda", "base-b-test-1-gpu-small", False, 12),
    ("cuda", "nightly-kernel-1-gpu", True, 4),
    ("cuda", "stress", False, 1),
    ("cpu", "base-a-test-cpu", False, 6),
    ("amd", "stage-b-test-1-gpu-small-amd", False, 8),
    ("amd", "nightly-amd", True, 3),
    ("npu", "base-b-test-1-npu-a3", False, 4),
    ("mlx", "stage-a-unit-test-mlx", False, 2),
]
AREAS = ("attention", "models", "kernels/ops", "lora", "spec", "quant", "sampling", "openai")


@dataclass(frozen=True)
class Reg:
    """One registration as written in a file."""

    backend: str
    est_time: float
    suite: str | None = None
    stage: str | None = None
    runner_config: str | None = None
    nightly: bool = False
    disabled: str | None = None
    style: str = "keyword"  # keyword | positional | multiline

    @property
    def effective_suite(self) -> str | None:
        """SGLang's ``CIRegistry.effective_suite``."""
        if self.stage is not None and self.runner_config is not None:
            return f"{self.stage}-test-{self.runner_config}"
        return self.suite

    def source(self) -> str:
        """The call as it appears in the file."""
        marker = f"register_{self.backend}_ci"
        est = repr(self.est_time) if isinstance(self.est_time, float) else str(self.est_time)
        if self.style == "positional" and self.suite is not None:
            args = [est, repr(self.suite)]
            if self.nightly or self.disabled is not None:
                args.append(repr(self.nightly))
            if self.disabled is not None:
                args.append(repr(self.disabled))
            return f"{marker}({', '.join(args)})"
        parts = [f"est_time={est}"]
        if self.suite is not None:
            parts.append(f"suite={self.suite!r}")
        else:
            parts += [f"stage={self.stage!r}", f"runner_config={self.runner_config!r}"]
        if self.nightly:
            parts.append("nightly=True")
        if self.disabled is not None:
            parts.append(f"disabled={self.disabled!r}")
        if self.style == "multiline":
            return f"{marker}(\n" + "".join(f"    {p},\n" for p in parts) + ")"
        return f"{marker}({', '.join(parts)})"


@dataclass(frozen=True)
class GeneratedFile:
    """One file of the tree and the registrations it holds."""

    path: str
    regs: tuple[Reg, ...]
    source: str


def _reg(rng: random.Random, taken: set[tuple[str, str]], est: float | None = None) -> Reg:
    """A registration for a weighted random suite this file does not register yet."""
    while True:
        backend, name, nightly, _ = rng.choices(SUITES, weights=[s[3] for s in SUITES])[0]
        key = (backend, name if isinstance(name, str) else "-test-".join(name))
        if key not in taken:
            taken.add(key)
            break
    est_time: float = est if est is not None else rng.choice([rng.randint(5, 900), 12.5, 30, 60])
    disabled = rng.choice([None] * 9 + ["flaky on CI, see #23412"])
    style = rng.choice(["keyword"] * 5 + ["positional", "multiline"])
    if isinstance(name, tuple):
        style = "multiline" if style == "multiline" else "keyword"
        return Reg(backend, est_time, None, name[0], name[1], nightly, disabled, style)
    return Reg(backend, est_time, name, None, None, nightly, disabled, style)


def _imports(regs: tuple[Reg, ...]) -> str:
    names = sorted({f"register_{r.backend}_ci" for r in regs})
    if len(names) == 1:
        return f"from {MARKER_MODULE} import {names[0]}\n"
    return f"from {MARKER_MODULE} import (\n" + "".join(f"    {n},\n" for n in names) + ")\n"


_UNITTEST_BODY = '''

class TestFeature{index}(CustomTestCase):
    """Checks feature {index}. Registered above with register_cuda_ci(...), see ci_register."""

    def test_basic(self):
        self.assertEqual(sum(range({index} % 7 + 2)), ({index} % 7 + 2) * ({index} % 7 + 1) // 2)

    def test_other(self):
        # register_amd_ci(est_time=1, suite="stage-b-test-1-gpu-small-amd")  (commented out)
        self.assertTrue(str({index}).isdigit())
'''
_PYTEST_BODY = """

HELP = "run with register_cuda_ci(est_time=..., suite=...) registered"


@pytest.mark.parametrize("n", [1, 2, 4])
def test_scaled_{index}(n):
    assert n * {index} // n == {index}


def test_help_mentions_the_marker():
    assert "register_cuda_ci" in HELP
"""
_UNITTEST_MAIN = 'if __name__ == "__main__":\n    unittest.main()\n'
_PYTEST_MAIN = 'if __name__ == "__main__":\n    sys.exit(pytest.main([__file__, "-v"]))\n'


def _test_file(index: int, path: str, regs: tuple[Reg, ...], rng: random.Random) -> str:
    unittest_style = index % 2 == 0
    head = f'"""Generated test {index}: registered with register_<backend>_ci markers."""\n\n'
    head += (
        "import sys\nimport unittest\n\n" if unittest_style else "import sys\n\nimport pytest\n\n"
    )
    head += _imports(regs)
    if unittest_style:
        head += "from sglang.test.test_utils import CustomTestCase\n"
    body = (_UNITTEST_BODY if unittest_style else _PYTEST_BODY).format(index=index)
    main = _UNITTEST_MAIN if unittest_style else _PYTEST_MAIN
    calls = "\n".join(r.source() for r in regs) + "\n"
    placement = rng.choice(["top", "top", "top", "late", "after-main"])
    if placement == "top":
        return head + "\n" + calls + body + "\n\n" + main
    if placement == "late":  # after the tests, before the main block
        return head + body + "\n\n" + calls + "\n\n" + main
    return head + body + "\n\n" + main + "\n\n# registered at the very end\n" + calls


def _helper_file(index: int, rng: random.Random) -> tuple[tuple[Reg, ...], str]:
    """A helper module: every registration disabled, est_time=0, no ``__main__`` block."""
    regs = [Reg("cuda", 0, "", disabled="helper module, not a test", style="keyword")]
    if index % 3 == 0:
        regs.append(Reg("amd", 0, "", disabled="helper module, not a test", style="positional"))
    if index % 4 == 0:
        regs.append(Reg("cuda", 0, "base-b-test-1-gpu-large", disabled="shared fixtures"))
    text = (
        f'"""Helpers for area {index}; not a test. SGLang requires every file to register."""\n\n'
        + _imports(tuple(regs))
        + "\n"
        + "\n".join(r.source() for r in regs)
        + "\n\n\ndef make_inputs(n: int) -> list[int]:\n    return list(range(n))\n"
    )
    return tuple(regs), text


def generate(count: int, seed: int = 0) -> list[GeneratedFile]:
    """``count`` files of a SGLang-shaped registered tree (deterministic for a seed)."""
    rng = random.Random(seed)
    files: list[GeneratedFile] = []
    for index in range(count):
        area = AREAS[index % len(AREAS)]
        if index % 25 == 7:
            regs, text = _helper_file(index, rng)
            name = f"{area.replace('/', '_')}_utils_{index:04d}.py"
            files.append(GeneratedFile(f"registered/{area}/{name}", regs, text))
            continue
        taken: set[tuple[str, str]] = set()
        howmany = rng.choices([1, 2, 3, 4], weights=[70, 18, 8, 4])[0]
        regs = tuple(_reg(rng, taken) for _ in range(howmany))
        if index % 20 == 3:
            regs = tuple(dataclasses.replace(r, disabled="not ready") for r in regs)
        if index % 40 == 11:
            name = f"accuracy_{index:04d}.py"  # SGLang collects every *.py, whatever its name
        elif index % 10 == 5:
            name = f"bench_{index:04d}.py"
        else:
            name = f"test_{index:04d}.py"
        path = f"registered/{area}/{name}"
        files.append(GeneratedFile(path, regs, _test_file(index, path, regs, rng)))
    return files


def write(root: Path, files: list[GeneratedFile], pyproject: str | None = None) -> Path:
    """Write the files under ``root`` (plus ``__init__.py``/``conftest.py`` files, which the
    anchor never collects) and a ``pyproject.toml`` (no catalog unless ``pyproject`` has one)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject or '[project]\nname = "sglang-like"\n')
    for generated in files:
        path = root / generated.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(generated.source, encoding="utf-8")
        (path.parent / "__init__.py").write_text("")
    (root / "registered" / "conftest.py").write_text("import pytest  # fixtures\n")
    return root


def anchor_selection(
    files: list[GeneratedFile], hw: str, suite: str, nightly: bool
) -> tuple[set[tuple[str, float]], set[tuple[str, str]]]:
    """What SGLang's rules select: ({(path, est_time)} enabled, {(path, reason)} disabled)."""
    enabled: set[tuple[str, float]] = set()
    disabled: set[tuple[str, str]] = set()
    for generated in files:
        for reg in generated.regs:
            if reg.backend == hw and reg.effective_suite == suite and reg.nightly == nightly:
                if reg.disabled is None:
                    enabled.add((generated.path, float(reg.est_time)))
                else:
                    disabled.add((generated.path, reg.disabled))
    return enabled, disabled


def anchor_suites(files: list[GeneratedFile]) -> set[tuple[str, str, bool]]:
    """Every (backend, effective suite, nightly) the tree registers for (placeholders excluded)."""
    return {
        (reg.backend, str(reg.effective_suite), reg.nightly)
        for generated in files
        for reg in generated.regs
        if reg.effective_suite
    }
