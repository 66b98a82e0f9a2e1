"""Cutting a new version of a file with an earlier version's blocks (``like``) reuses the hash of
each function whose key, columns and text are unchanged, and gives exactly the blocks a fresh cut
gives, whatever the edit: bodies changed, code moved, names defined twice, other line ends, form
feeds and line separators inside strings and comments, a BOM or a coding cookie, other
indentation (property test)."""

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.impact import blocks as blocks_module
from ci_runner.impact.blocks import parse_blocks

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

NAMES = st.sampled_from(["f", "g", "h"])  # few names: some are defined twice
ODD = st.sampled_from(["", "\x0c", "\x0b", "\x1c", "\u2028", "\x85", "é"])  # not line ends here
STATEMENTS = st.sampled_from(["return 1", "return x + 1", "x = 2", "pass", "yield x"])


@st.composite
def function(draw, indent: str = "") -> str:
    name = draw(NAMES)
    head = "async def" if draw(st.booleans()) else "def"
    lines = [f"{indent}@staticmethod"] if draw(st.booleans()) else []
    lines.append(f"{indent}{head} {name}(x=1):")
    odd = draw(ODD)
    lines.append(f"{indent}    s = '{odd}'  # {draw(ODD)}")
    if draw(st.booleans()):
        lines += [f"{indent}    def inner():", f"{indent}        {draw(STATEMENTS)}"]
    lines.append(f"{indent}    {draw(STATEMENTS)}")
    return "\n".join(lines)


@st.composite
def unit(draw) -> str:
    kind = draw(st.sampled_from(["function", "class", "if", "constant"]))
    if kind == "class":
        methods = draw(st.lists(function(indent="    "), min_size=1, max_size=3))
        return "class C:\n" + "\n".join(methods)
    if kind == "if":
        return "if True:\n" + draw(function(indent="    "))
    if kind == "constant":
        return f"VALUE = {draw(st.integers(0, 3))}  # {draw(ODD)}"
    return draw(function())


def render(units: list[str], ending: str, prefix: str, gap: str) -> bytes:
    text = prefix + gap.join(units) + "\n"
    encoding = "latin-1" if prefix.startswith("# -*- coding: latin-1") else "utf-8"
    raw = text.replace("\n", ending).encode(encoding, errors="replace")
    return raw


FILES = st.tuples(
    st.lists(unit(), min_size=1, max_size=6),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.sampled_from(["", "\ufeff", "# -*- coding: latin-1 -*-\n", "'''doc'''\n"]),
    st.sampled_from(["\n\n", "\n# comment\n", "\n\x0c\n", "\n"]),
)


@st.composite
def edited(draw) -> tuple[bytes, bytes]:
    """An old file and a new one: the same units edited, moved, re-indented or re-encoded."""
    units, ending, prefix, gap = draw(FILES)
    new_units = list(units)
    for _ in range(draw(st.integers(0, 3))):
        edit = draw(st.sampled_from(["last", "replace", "swap", "insert", "indent", "drop"]))
        index = draw(st.integers(0, len(new_units) - 1))
        if edit == "last":  # only the last statement: a slice one line short would not see it
            head, _, last = new_units[index].rpartition("\n")
            indent = last[: len(last) - len(last.lstrip())]
            new_units[index] = f"{head}\n{indent}{draw(STATEMENTS)}" if head else last
        elif edit == "replace":
            new_units[index] = draw(unit())
        elif edit == "swap":
            other = draw(st.integers(0, len(new_units) - 1))
            new_units[index], new_units[other] = new_units[other], new_units[index]
        elif edit == "insert":
            new_units.insert(index, draw(unit()))
        elif edit == "indent":
            new_units[index] = new_units[index].replace("    ", "\t")
        elif len(new_units) > 1:
            del new_units[index]
    new_style = draw(st.sampled_from([(ending, prefix, gap), draw(FILES)[1:]]))
    return render(units, ending, prefix, gap), render(new_units, *new_style)


@settings(max_examples=400, deadline=None)
@given(pair=edited())
def test_reusing_an_earlier_versions_hashes_changes_no_block(pair):
    old, new = pair
    earlier = parse_blocks(old)
    assert parse_blocks(new, like=earlier or []) == parse_blocks(new)


def test_only_the_changed_function_is_dumped(monkeypatch):
    old = b"import os\n\ndef f(x):\n    return x\n\nclass A:\n    def m(self):\n        return 1\n"
    new = old.replace(b"return x", b"return x + 1").replace(b"import os", b"import os  # why")
    earlier = parse_blocks(old)
    dumped = []
    real = blocks_module._digest
    monkeypatch.setattr(blocks_module, "_digest", lambda node: dumped.append(node) or real(node))
    again = parse_blocks(new, like=earlier)
    assert [type(node).__name__ for node in dumped] == ["FunctionDef", "Module"]
    assert dumped[0].name == "f"
    assert {b.key: b.digest for b in again}["A.m"] == {b.key: b.digest for b in earlier}["A.m"]


def test_a_text_key_is_never_reused_across_names_or_columns():
    """Same text, another key (a second ``f`` moved first) or another column (the function
    moved into an ``if``): dumped again, so the ``#2`` block is the other function's hash."""
    old = b"def f():\n    return 1\n\ndef f():\n    return 2\n"
    new = b"def f():\n    return 2\n\ndef f():\n    return 1\n"
    fresh = {b.key: b.digest for b in parse_blocks(new)}
    assert {b.key: b.digest for b in parse_blocks(new, like=parse_blocks(old))} == fresh
    assert fresh["f"] == {b.key: b.digest for b in parse_blocks(old)}["f#2"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
