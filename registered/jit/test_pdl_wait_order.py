"""tools/pdl_wait_order.py on canned cuobjdump output: global accesses before a PDL wait are found.

The GPU check (the real cache after ``jit_kernel precompile``) is in docs/gpu-verification.md.
"""

import shutil
import stat
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from tools.pdl_wait_order import early_accesses, main

register_cpu_ci(est_time=2, suite="base-a-test-cpu")


def function(name: str, *instructions: str) -> str:
    lines = [f"\t\tFunction : {name}", '\t.headerflags\t@"EF_CUDA_SM90"']
    for i, text in enumerate(instructions):
        lines.append(f"        /*{i * 16:04x}*/                   {text} ;   /* 0x000 */")
    return "\n".join(lines) + "\n"


SAFE = function(
    "safe",
    "LDC R1, c[0x0][0x28]",
    "S2R R0, SR_TID.X",
    "@P0 EXIT",
    "PREEXIT",
    "ACQBULK",
    "LDG.E.64 R8, desc[UR4][R8.64]",
    "STG.E.64 desc[UR4][R2.64], R8",
)
HOISTED = function(
    "hoisted",
    "LDC.64 R8, c[0x0][0x218]",
    "LDS R3, [R2]",
    "LDG.E.64.CONSTANT R8, desc[UR4][R8.64]",
    "@!P1 ST.E.128 desc[UR4][R4.64], R8",
    "ACQBULK",
    "LD.E.128 R4, desc[UR4][R4.64]",
)
NO_WAIT = function("no_wait", "LDG.E R0, desc[UR4][R2.64]", "EXIT")


def test_accesses_before_the_wait_are_listed_and_nothing_else():
    found = early_accesses(SAFE + HOISTED + NO_WAIT)
    assert found == {
        "safe": [],
        "hoisted": ["LDG.E.64.CONSTANT R8, desc[UR4][R8.64]", "@!P1 ST.E.128 desc[UR4][R4.64], R8"],
    }


def fake_cuobjdump(tmp_path, sass: str) -> None:
    """A cuobjdump on PATH that prints ``sass`` for any library."""
    (tmp_path / "dump.txt").write_text(sass)
    tool = tmp_path / "bin" / "cuobjdump"
    tool.parent.mkdir()
    tool.write_text(f"#!/bin/sh\nexec {shutil.which('cat')} {tmp_path / 'dump.txt'}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize(("sass", "code"), [(SAFE + NO_WAIT, 0), (SAFE + HOISTED, 1)])
def test_exit_code_says_whether_any_kernel_touches_memory_early(
    tmp_path, monkeypatch, capsys, sass, code
):
    fake_cuobjdump(tmp_path, sass)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    cache = tmp_path / "cache"
    (cache / "jit_x_0123").mkdir(parents=True)
    (cache / "jit_x_0123" / "jit_x.so").write_bytes(b"")
    assert main([str(cache)]) == code
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == (
        f"{2 if code else 1} kernels wait for the previous one; {code} touch global memory "
        "before the wait"
    )
    assert ("jit_x: hoisted: LDG.E.64.CONSTANT" in out) == bool(code)


def test_missing_tool_or_empty_cache_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert main([str(tmp_path)]) == 2
    assert "cuobjdump not found on PATH or in $CUDA_HOME/bin" in capsys.readouterr().err
    fake_cuobjdump(tmp_path, SAFE)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert main([str(tmp_path / "empty")]) == 2
    assert "holds no built module" in capsys.readouterr().err


def test_a_module_cuobjdump_cannot_read_is_named(tmp_path, monkeypatch, capsys):
    tool = tmp_path / "bin" / "cuobjdump"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho 'cuobjdump fatal   : Could not open input file' >&2\nexit 1\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    library = tmp_path / "cache" / "jit_x_0123" / "jit_x.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"not an ELF")
    assert main([str(tmp_path / "cache")]) == 2
    assert capsys.readouterr().err == (
        f"pdl_wait_order: cuobjdump cannot read {library} "
        "(exit 1: cuobjdump fatal   : Could not open input file)\n"
    )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
