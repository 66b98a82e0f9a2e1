"""``cpp_includes`` against the real preprocessor: generated sources, every spelling it accepts.

Each example is a source of random lines: includes spelled every way g++ accepts (a UTF-8 BOM,
``%:`` for ``#``, ``#import``, ``#include_next``, spaces, tabs, form feeds, vertical tabs, NULs
and comments around the directive name, backslash line joins with LF, CRLF, CR or trailing
blanks inside any word, lines ending in LF, CRLF or CR) and decoys it does not follow (an
include in a comment, a string, a raw string, after code, behind a line comment joined to it,
``%:%:include``). Some examples name a header through a macro (``#include H``) or hold a
trigraph, which the scanner must report as unproven. ``g++ -M`` lists what the preprocessor
read; every header it lists must be in the scanner's closure, or the scanner must say why it
cannot know; when it claims to know, its closure must be exactly what g++ read.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from cpp_includes import include_closure, scan_source

register_cpu_ci(est_time=12, suite="base-a-test-cpu")

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="g++ is not installed")

HEADERS = [f"h{i}.h" for i in range(5)]  # in inc/ (found by "..." and <...>)
LOCAL = ["local.h"]  # next to the source only (found by "..." alone)
NESTED = {"h0.h": '#include "h4.h"\n'}  # a header that includes another

PROPERTY = settings(
    max_examples=120,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

BLANK = st.sampled_from([" ", "\t", "\f", "\v", "\0", "/* c */", "/* two\nlines */", "/**/"])
LINE_END = st.sampled_from(["\n", "\r\n", "\r"])
JOIN = st.sampled_from(["\\\n", "\\\r\n", "\\\r", "\\ \n", "\\\t\r\n"])


@st.composite
def gap(draw, at_least: int = 0) -> str:
    return "".join(draw(st.lists(BLANK, min_size=at_least, max_size=3)))


@st.composite
def joined(draw, text: str) -> str:
    """``text`` with backslash line joins at random places (the preprocessor removes them
    before anything else); none at the end, which would join the next line to it."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text) - 1), max_size=2)))
    pieces, last = [], 0
    for cut in cuts:
        pieces += [text[last:cut], draw(JOIN)]
        last = cut
    return "".join([*pieces, text[last:]])


@st.composite
def header_name(draw) -> tuple[str, str]:
    """(header, its spelling): ``"h.h"`` or ``<h.h>``."""
    header = draw(st.sampled_from(HEADERS + LOCAL))
    quote = '"' if header in LOCAL else draw(st.sampled_from(['"', "<"]))
    return header, f'"{header}"' if quote == '"' else f"<{header}>"


@st.composite
def include_line(draw) -> tuple[str, set[str], bool]:
    """(text, headers it includes, whether only a preprocessor can tell)."""
    header, name = draw(header_name())
    hash_ = draw(st.sampled_from(["#", "%:"]))
    directive = draw(st.sampled_from(["include", "include", "import", "include_next"]))
    if directive == "include_next" and header in LOCAL:
        directive = "include"
    line = f"{draw(gap())}{hash_}{draw(gap())}{directive}{draw(gap())}{name}"
    line += draw(st.sampled_from(["", " // why", " /* why */", "\t"]))
    return draw(joined(line)), {header}, False


@st.composite
def decoy_line(draw) -> tuple[str, set[str], bool]:
    """A line that mentions an include the preprocessor does not perform."""
    _, name = draw(header_name())
    escaped = name.replace('"', '\\"')
    text = draw(
        st.sampled_from(
            [
                f"// #include {name}",
                f"/* #include {name} */",
                f"/*\n#include {name}\n*/",
                f'const char* s{draw(st.integers(0, 99))} = "#include {escaped}";',
                f'const char* r{draw(st.integers(0, 99))} = R"d(\n#include {name}\n)d";',
                f"int a{draw(st.integers(0, 99))}; #include {name}",
                f"%:%:include {name}",
                f"#\ninclude {name}",
                f"// a line comment joined to the next \\\n#include {name}",
                f"#define M{draw(st.integers(0, 99))} \\\n#include {name}",
                f'auto r{draw(st.integers(0, 99))} = u8R"x(/*)x" LR"(\n#include {name}\n)";',
            ]
        )
    )
    return text, set(), False


CODE = st.sampled_from(
    [
        'auto s = "/*";',
        "auto c = '\"';",
        "int d = 1'000'000; /* c */",
        "#define STR(x) #x",
        'auto w = L"//";',
        'auto u = u8R"x(/*)x";',
        'auto v = XR"(";',
        "int q = 2 % 1 / 1;",
        "auto e = '\\'';",
        "#if 0\nit's /* no comment: the quote runs to the end of the line\n#endif",
        "int n = 1'0; /* a comment\nover two lines */",
    ]
)


@st.composite
def code_line(draw) -> tuple[str, set[str], bool]:
    """Code whose literals hold what looks like a comment or a quote."""
    return draw(CODE), set(), False


@st.composite
def macro_line(draw) -> tuple[str, set[str], bool]:
    header, name = draw(header_name())
    macro = f"H{draw(st.integers(0, 99))}"
    return f"#define {macro} {name}\n#{draw(gap())}include {macro}", {header}, True


@st.composite
def trigraph_line(draw) -> tuple[str, set[str], bool]:
    _, name = draw(header_name())
    return f"??=include {name}", set(), True  # g++ -std=c++20 ignores trigraphs


@st.composite
def source(draw) -> tuple[bytes, set[str], bool]:
    """(source bytes, headers it certainly includes, whether it holds something unprovable)."""
    kinds = st.one_of(
        include_line(), include_line(), decoy_line(), code_line(), macro_line(), trigraph_line()
    )
    lines = draw(st.lists(kinds, min_size=1, max_size=6))
    text = ""
    for line, _, _ in lines:
        text += line + draw(LINE_END)
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no line end at the end of the file
    data = text.encode()
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    headers = set().union(*(found for _, found, _ in lines))
    return data, headers, any(unprovable for _, _, unprovable in lines)


def write_tree(root: Path, data: bytes) -> Path:
    (root / "inc").mkdir()
    (root / "src").mkdir()
    for header in HEADERS:
        (root / "inc" / header).write_text(
            f"#pragma once\n{NESTED.get(header, '')}int v_{header[:-2]};\n"
        )
    for header in LOCAL:
        (root / "src" / header).write_text("#pragma once\nint v_local;\n")
    main = root / "src" / "main.cpp"
    main.write_bytes(data)
    return main


def preprocessor_reads(main: Path, include_dir: Path) -> set[Path]:
    """The files ``g++ -M`` says the preprocessor read for ``main`` (the tree's files only)."""
    depfile = main.with_suffix(".d")
    done = subprocess.run(
        [GXX, "-std=c++20", "-M", "-MF", str(depfile), "-MT", "x", f"-I{include_dir}", str(main)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    words = depfile.read_text().replace("\\\n", " ").split(":", 1)[1].split()
    root = main.parent.parent.resolve()
    return {Path(w).resolve() for w in words if Path(w).resolve().is_relative_to(root)}


@PROPERTY
@given(source())
def test_the_scanner_reads_what_gcc_reads_or_says_it_cannot(generated) -> None:
    data, certain, unprovable = generated
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory).resolve()
        main = write_tree(root, data)
        read = preprocessor_reads(main, root / "inc")
        closure = include_closure([main], [root / "inc"])
        found = set(closure.files)
        if unprovable:
            assert not closure.proven, f"{data!r}: the scanner claims to know"
        else:
            assert closure.proven, f"{data!r}: {closure.unproven}"
        assert {main.parent / h if h in LOCAL else root / "inc" / h for h in certain} <= read
        if closure.proven:
            assert found == read, (
                f"{data!r}: gcc read {sorted(map(str, read - found))} that the scanner missed; "
                f"the scanner added {sorted(map(str, found - read))}"
            )
        else:
            assert found <= read, f"{data!r}: the scanner added {sorted(map(str, found - read))}"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (b'#define H "h0.h"\n#include H\n', "2: #include H: the file is named by a macro"),
        (b"#if __has_include(NAME)\n#endif\n", "1: __has_include(NAME): the file is named by"),
        (b'??=include "h0.h"\n', "1: trigraph ??=: a directive or line join only with -trigraphs"),
        (
            b'#incl\\u0075de "h0.h"\n',
            "1: #incl\\u0075de: a directive name spelled with a universal",
        ),
        (b'#include "h0.h\n', '1: #include "h0.h: the header name has no closing "'),
        (b"x\\\ny\r\n#include <h0.h\n", "3: #include <h0.h: the header name has no closing >"),
    ],
)
def test_what_cannot_be_proven_is_said_with_its_line(source, message) -> None:
    (unproven,) = scan_source(source).unproven
    assert f"{unproven.line}: {unproven.text}".startswith(message)


@pytest.mark.parametrize(
    "source",
    [
        b"#if defined(__has_include)\n#endif\n#ifdef __has_include\n#endif\n",
        b"int __has_include_x = 1;\n",
        b'#include "a.h" // ??? not a trigraph: ?? then a space\n',
    ],
)
def test_ordinary_code_is_not_unproven(source) -> None:
    assert scan_source(source).unproven == ()


def test_existence_operators_and_embed_name_dependencies() -> None:
    scan = scan_source(
        b'#if __has_include(<a.h>) && __has_include_next("b.h")\n#embed "data.bin"\n#endif\n'
    )
    assert [(i.kind, i.target) for i in scan.includes] == [
        ("__has_include", "a.h"),
        ("__has_include_next", "b.h"),
        ("embed", "data.bin"),
    ]


def test_embedded_data_is_a_dependency_but_is_not_scanned(tmp_path) -> None:
    (tmp_path / "data.bin").write_bytes(b'#include "never.h"\n??=')
    (tmp_path / "never.h").write_text("")
    main = tmp_path / "main.cpp"
    main.write_text('#embed "data.bin"\n')
    closure = include_closure([main], [])
    assert set(closure.files) == {main.resolve(), (tmp_path / "data.bin").resolve()}
    assert closure.proven


def test_header_names_are_read_byte_for_byte(tmp_path) -> None:
    """A name with bytes that are not UTF-8 resolves to that file; a NUL names no file."""
    odd = os.fsencode(str(tmp_path)) + b"/\xff odd .h"
    open(odd, "w").close()
    main = tmp_path / "main.cpp"
    main.write_bytes(b'#include "\xff odd .h"\n#include "a\x00.h"\n#include " odd .h"\n')
    assert set(include_closure([main], []).files) == {main, Path(os.fsdecode(odd))}


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
