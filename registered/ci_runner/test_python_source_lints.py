"""The collector and the lints read a test file as the interpreter does: a UTF-8 BOM, a coding
cookie, identifiers that NFKC-normalise to a marker name (``ｒegister_cpu_ci`` is
``register_cpu_ci`` to Python), form feeds and characters ``str.splitlines`` takes for line
ends (``\\x1c``, ``\\x85``, U+2028) inside a line, and continuations. A property test writes
such files and checks each reader against Python itself: what ``exec`` registers is what the
collector collects, what the package lint flags, and what ``update-est-time --write`` rewrites
(one literal, nothing else)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.catalog.syntax import DEFAULT_SYNTAX
from ci_runner.collect.file_scan import scan_file
from ci_runner.collect.source_text import decode, encoding_of, python_lines
from ci_runner.maintenance.est_time import find_literals, rewrite
from ci_runner.maintenance.registration_lints import package_offenders

sys.path.insert(0, str(Path(__file__).parent))
from testing.tree_builder import REPO_ROOT, catalog_toml, suite_toml, write_tree

register_cpu_ci(est_time=11, suite="base-a-test-cpu")

MARKER = "register_cpu_ci"
MAIN = '\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n'
HEAD = "import sys\nimport pytest\n"
PROPERTY = settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def executed(data: bytes) -> list[tuple[float, str]]:
    """The registrations Python itself makes when it runs ``data`` (the oracle)."""
    calls: list[tuple[float, str]] = []

    def record(est_time: float, suite: str, **_: object) -> None:
        calls.append((est_time, suite))

    names = {"__name__": "not_main", "register_cpu_ci": record}
    exec(compile(data, "test_x.py", "exec"), names)  # the interpreter is the oracle
    return calls


def fullwidth(letter: str) -> str:
    return chr(ord(letter) + 0xFEE0)  # "r" -> "ｒ" (U+FF52), NFKC maps it back


def bold(letter: str) -> str:
    return chr(0x1D41A + ord(letter) - ord("a"))  # "r" -> "𝐫" (MATHEMATICAL BOLD SMALL R)


@st.composite
def sources(draw) -> bytes:
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "latin-1"]))
    marker = MARKER
    if encoding != "latin-1":
        spell = draw(st.lists(st.sampled_from([str, fullwidth, bold]), min_size=len(MARKER), max_size=len(MARKER)))  # fmt: skip
        marker = "".join(f(c) if c.isalpha() else c for f, c in zip(spell, MARKER, strict=True))
    est = draw(st.integers(min_value=1, max_value=9000))
    lines = ["X = 'a\x1cb'", "Y = '\x85'", "# a comment\x0cwith a form feed", "\x0c", "W = (1 +\n     2)", "V = 1 + \\\n    2", "T = '\x1e\x1d'"]  # fmt: skip
    if encoding != "latin-1":
        lines += ["Z = '\u2028\u2029'", "U = 'é'"]
    before = draw(st.lists(st.sampled_from(lines), max_size=5))
    call = draw(
        st.sampled_from(
            [
                "{m}(est_time={e}, suite='s')",
                "{m}(\n    est_time={e},\n    suite='s',\n)",
                "{m}(est_time={e}, \\\n    suite='s')",
                "\x0c{m}(est_time={e}, suite='s')",
            ]
        )
    )
    text = "\n".join([HEAD.rstrip("\n"), *before, call.format(m=marker, e=est)]) + "\n" + MAIN
    if encoding == "latin-1":
        text = "# -*- coding: latin-1 -*-\n" + text + "L = 'é'\n"
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text.encode(encoding)


@PROPERTY
@given(sources())
def test_every_reader_agrees_with_what_python_executes(tmp_path, data):
    expected = executed(data)
    assert len(expected) == 1
    est, suite = expected[0]
    # the collector
    scan = scan_file(data, "registered/test_x.py", DEFAULT_SYNTAX)
    assert [(r.est_time, r.suite) for r in scan.registrations] == [(est, suite)]
    # the package lint
    package = tmp_path / "pkg"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "test_x.py").write_bytes(data)
    found = package_offenders(tmp_path, ["pkg"])
    assert [p.message for p in found] == [f"registers a CI test (cpu, suite {suite!r})"]
    # update-est-time: find the literal, rewrite it, and nothing else
    text = decode(data)
    (literal,) = find_literals(text, "registered/test_x.py")
    assert literal.value == est and literal.text == str(est)
    new = rewrite(text, [(literal, est + 1000)])
    new_data = new.encode(encoding_of(data))
    assert executed(new_data) == [(est + 1000, suite)]
    old_lines, new_lines = python_lines(text), python_lines(new)
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert changed == [literal.line - 1]
    assert new_lines[literal.line - 1].replace(str(est + 1000), str(est), 1) == old_lines[literal.line - 1]  # fmt: skip
    assert new_data.startswith(b"\xef\xbb\xbf") == data.startswith(b"\xef\xbb\xbf")


CASES = {
    "bom": b"\xef\xbb\xbf" + (HEAD + 'register_cpu_ci(est_time=100, suite="s")\n' + MAIN).encode(),
    "fullwidth": (HEAD + '\uff52egister_cpu_ci(est_time=100, suite="s")\n' + MAIN).encode(),
    "form-feed": (HEAD + '# a\x0cb\nregister_cpu_ci(est_time=100, suite="s")\n' + MAIN).encode(),
    "latin-1": (
        "# -*- coding: latin-1 -*-\n" + HEAD + 'X = "\xe9"\nregister_cpu_ci(est_time=100, suite="s")\n' + MAIN
    ).encode("latin-1"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_commands_agree_with_python_on_each_spelling(tmp_path, name):
    data = CASES[name]
    root = write_tree(tmp_path, catalog_toml(suite_toml("s", "cpu")), {})
    (root / "registered").mkdir()
    (root / "registered" / "test_x.py").write_bytes(data)
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "test_y.py").write_bytes(data)
    row = json.dumps({"path": "registered/test_x.py", "suite": "s", "elapsed": 300, "status": "passed"})  # fmt: skip
    (root / "t.jsonl").write_text((row + "\n") * 3)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "CI_RUNNER_PARSE_CACHE": "0"}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *argv], cwd=root, env=env, capture_output=True, text=True)  # fmt: skip

    dry = run(str(REPO_ROOT / "run_suite.py"), "--hw", "cpu", "--suite", "s", "--dry-run")
    assert "registered/test_x.py (est 100s)" in dry.stdout, dry.stdout + dry.stderr
    lint = run("-m", "ci_runner.maintenance", "check-no-registered-tests-in-package")
    assert lint.returncode == 1
    assert "pkg/test_y.py:" in lint.stdout + lint.stderr
    assert "registers a CI test (cpu, suite 's')" in lint.stdout + lint.stderr
    est = run("-m", "ci_runner.maintenance", "update-est-time", "--timings", "t.jsonl", "--write")
    assert "rewrote 1 est_time literal(s) in 1 file(s)" in est.stdout, est.stdout
    rewritten = (root / "registered" / "test_x.py").read_bytes()
    assert rewritten == data.replace(b"est_time=100", b"est_time=300")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
