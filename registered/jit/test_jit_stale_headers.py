"""A cached module is never served after a header it includes changed, however it was included.

One host-only module includes one header per spelling the preprocessor accepts, each header
returning 1001: a UTF-8 BOM before the ``#include``, the digraph ``%:include``, ``#import``,
``#include_next``, a comment between ``#`` and ``include``, a line join (LF and CRLF), a form
feed, lone-CR line ends, ``__has_include``, a macro (``#include VAL_MACRO_H``), the trigraph
``??=include`` (the module is built with ``-trigraphs``: without it g++ and nvcc in their C++20
modes ignore trigraphs), and a plain ``#include`` of a header found only through an ``-I`` in
``extra_cflags``. Each header is edited to return 5001 in turn, and ``load_jit`` (never
``JIT_KERNEL_FORCE_REBUILD``) must return 5001: either the static key follows the spelling (the
module's path changes) or the compiler's dependency record does (the module at the same path is
rebuilt).
"""

import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from jit_kernel.compiler import jit_module_path, load_jit

register_cpu_ci(est_time=30, suite="base-a-test-cpu")

BOM = "\ufeff"
# name -> the line(s) that include val_<name>.h
SPELLINGS = {
    "plain": '#include "val_plain.h"\n',
    "bom": f'{BOM}#include "val_bom.h"\n',
    "digraph": '%:include "val_digraph.h"\n',
    "import": '#import "val_import.h"\n',
    "next": '#include_next "val_next.h"\n',
    "comment": '# /* why */ include "val_comment.h"\n',
    "join": '#inc\\\nlude "val_join.h"\n',
    "join_crlf": '#include \\\r\n"val_join_crlf.h"\r\n',
    "form_feed": '#\finclude\v"val_form_feed.h"\n',
    "cr": '// lone CR line ends\r#include "val_cr.h"\r',
    "has_include": '#if __has_include("val_has_include.h")\n#include "val_has_include.h"\n#endif\n',
    "macro": '#define VAL_MACRO_H "val_macro.h"\n#include VAL_MACRO_H\n',
    "trigraph": '??=include "val_trigraph.h"\n',
    "flag": '#include "val_flag.h"\n',  # val_flag.h is only in -I flagdir (extra_cflags)
}
# Spellings whose header the static key cannot follow: the dependency record must.
RECORD_ONLY = ("macro", "trigraph", "flag")


def header(directory: Path, name: str, value: int) -> None:
    where = directory / "flagdir" if name == "flag" else directory
    where.mkdir(parents=True, exist_ok=True)
    (where / f"val_{name}.h").write_text(
        f"#pragma once\ninline int64_t val_{name}() {{ return {value}; }}\n"
    )


def write_kernel(directory: Path) -> list[str]:
    """One source per spelling and a dispatcher; returns the cpp_files."""
    files = []
    for name, line in SPELLINGS.items():
        header(directory, name, 1001)
        source = directory / f"s_{name}.cpp"
        source.write_bytes(line.encode())
        files.append(str(source))
    cases = "".join(f"  case {i}: return val_{n}();\n" for i, n in enumerate(SPELLINGS))
    dispatcher = directory / "values.cpp"
    dispatcher.write_text(
        f"int64_t value(int64_t i) {{\n  switch (i) {{\n{cases}  }}\n  return -1;\n}}\n"
    )
    return [*files, str(dispatcher)]


def test_every_spelling_of_an_edited_header_is_rebuilt(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("JIT_KERNEL_FORCE_REBUILD", raising=False)
    kernel = tmp_path / "kernel"
    call = {
        "cpp_files": write_kernel(kernel),
        "cpp_wrappers": [("value", "value")],
        "extra_cflags": ["-trigraphs", f"-I{kernel / 'flagdir'}"],
        "extra_include_paths": [str(kernel)],  # where #include_next continues
    }
    index = {name: i for i, name in enumerate(SPELLINGS)}
    module = load_jit("spellings", **call)
    assert [module.value(i) for i in index.values()] == [1001] * len(SPELLINGS)

    for name in RECORD_ONLY:  # the key stays; the module at that path must be rebuilt
        before = jit_module_path("spellings", **call)
        header(kernel, name, 5001)
        assert jit_module_path("spellings", **call) == before, f"{name}: the key saw it"
        assert load_jit("spellings", **call).value(index[name]) == 5001, name

    for name in SPELLINGS:  # the others: the key follows the spelling
        if name in RECORD_ONLY:
            continue
        before = jit_module_path("spellings", **call)
        header(kernel, name, 5001)
        assert jit_module_path("spellings", **call) != before, f"{name}: the key missed it"

    module = load_jit("spellings", **call)
    assert [module.value(i) for i in index.values()] == [5001] * len(SPELLINGS)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
