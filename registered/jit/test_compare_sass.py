"""tools/compare_sass.py on canned cuobjdump output: names may change, code and resources not."""

import sys
from collections import Counter

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from tools.compare_sass import compare, kernels_of, main

register_cpu_ci(est_time=2, suite="base-a-test-cpu")

SASS = """
\t\tFunction : {name}
\t.headerflags\t@"EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                  /* 0x00000a00ff017b82 */
                                                                            /* 0x000ff00000000800 */
        /*0010*/                   {op} R0, c[0x0][RZ] ;                   /* 0x00000000ff007b82 */
"""
USAGE = """
 Function {name}:
  REG:{regs} STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:544
"""


def dump(name: str, op: str = "LDC", regs: int = 16) -> Counter:
    return kernels_of(SASS.format(name=name, op=op), USAGE.format(name=name, regs=regs))


def test_a_renamed_kernel_with_the_same_code_is_identical():
    old = {"jit_x": dump("_Z6kernelILi1EEvv")}
    new = {"jit_x": dump("_Z6kernelI6ConfigILi1EEEvv")}  # a new template argument
    lines, same = compare(old, new)
    assert same and lines == ["jit_x: SASS identical (1 kernels, same resources)"]


def test_other_code_or_registers_differ():
    for changed in (dump("k", op="MOV"), dump("k", regs=24)):
        lines, same = compare({"jit_x": dump("k")}, {"jit_x": changed})
        assert not same
        assert lines[0] == "jit_x: DIFFERS (1 kernels old, 1 new; 1 only old, 1 only new)"
    lines, same = compare({"jit_x": dump("k")}, {})
    assert not same and "1 only old, 0 only new" in lines[0]


def test_missing_tools_are_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert main([str(tmp_path), str(tmp_path)]) == 2
    assert (
        "cuobjdump and nvdisasm not found on PATH or in $CUDA_HOME/bin" in capsys.readouterr().err
    )


def test_a_module_cuobjdump_cannot_read_is_named(tmp_path, monkeypatch, capsys):
    for tool in ("cuobjdump", "nvdisasm"):
        path = tmp_path / "bin" / tool
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            "#!/bin/sh\necho 'cuobjdump fatal   : Could not open input file' >&2\nexit 1\n"
        )
        path.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    library = tmp_path / "cache" / "jit_x_0123" / "jit_x.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"not an ELF")
    assert main([str(tmp_path / "cache"), str(tmp_path / "cache")]) == 2
    assert capsys.readouterr().err == (
        f"compare_sass: cuobjdump cannot read {library} "
        "(exit 1: cuobjdump fatal   : Could not open input file)\n"
    )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
