"""The runner's caches at their boundaries: no cache directory at all (no HOME, a uid with no
passwd entry) turns them off with one notice and every command still works; a parse-cache or
import-facts-cache entry holding any JSON value is either the entry a scan writes or damaged,
ignored and rewritten with a notice, never a traceback or a wrong result (property tests)."""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_runner import cache_location as location_module
from ci_runner import register_cpu_ci
from ci_runner.cache_location import cache_location
from ci_runner.catalog import load_catalog
from ci_runner.cli import main
from ci_runner.collect import collect
from ci_runner.collect.parse_cache import DamagedEntry, _scan
from ci_runner.impact.fact_cache import FactCache, _entry_problem

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import REPO_ROOT, make_repo, registered_source

register_cpu_ci(est_time=7, suite="base-a-test-cpu")

FILES = {
    "registered/test_a.py": registered_source('register_cpu_ci(est_time=30, suite="unit-cpu")'),
    "registered/test_b.py": registered_source(
        'register_cuda_ci(est_time=50, suite="unit-1-gpu", min_gpus=1)'
    ),
    "registered/test_bad.py": registered_source('register_cpu_ci(est_time="x", suite="extra-cpu")'),
}
# Fast and reproducible in CI: few examples, no example database.
PROPERTY = settings(
    max_examples=40,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
NO_PASSWD = "import pwd\n\ndef _missing(uid):\n    raise KeyError(f'getpwuid(): uid not found: {uid}')\n\npwd.getpwuid = _missing\n"  # fmt: skip


def no_home_env(tmp_path: Path) -> dict[str, str]:
    """An environment with no HOME, XDG_CACHE_HOME or CI_RUNNER_CACHE_DIR, in which the uid has
    no passwd entry (``docker run --user N``): a sitecustomize makes ``pwd.getpwuid`` fail."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_PASSWD)
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    env.pop("CI_RUNNER_CACHE_DIR", None)
    return {**env, "PYTHONPATH": os.pathsep.join([str(site), str(REPO_ROOT)])}


# ---------------------------------------------------------------------------- no directory


def test_location_order_and_what_is_not_a_place(monkeypatch):
    assert cache_location({"CI_RUNNER_CACHE_DIR": "/c", "XDG_CACHE_HOME": "/x"}).directory == Path(
        "/c"
    )
    assert cache_location({"XDG_CACHE_HOME": "/x", "HOME": "/h"}).directory == Path("/x/ci-runner")
    assert cache_location({"XDG_CACHE_HOME": "rel", "HOME": "/h"}).directory == Path(
        "/h/.cache/ci-runner"
    )  # the XDG spec: a relative XDG_CACHE_HOME is ignored
    relative = cache_location({"HOME": ""})
    assert relative.directory is None  # never a cache in the current directory
    assert relative.reason.startswith("HOME='' is not an absolute path")

    def no_entry(uid):
        raise KeyError(uid)

    monkeypatch.setattr(location_module.pwd, "getpwuid", no_entry)
    none = cache_location({})
    assert none.directory is None
    assert none.reason == (
        f"HOME is not set and uid {os.getuid()} has no passwd entry, XDG_CACHE_HOME is not set "
        "and CI_RUNNER_CACHE_DIR is not set"
    )


def test_every_command_works_without_a_cache_directory_with_one_notice(tmp_path):
    root = make_repo(tmp_path / "repo", FILES)
    (root / "registered" / "test_bad.py").unlink()
    (root / "changed.txt").write_text("registered/test_a.py\n")
    env = no_home_env(tmp_path)
    run_suite = [sys.executable, str(REPO_ROOT / "run_suite.py")]
    commands = [
        [*run_suite, "--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", "--dry-run"],
        [*run_suite, "--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", "--dry-run",
         "--changed-files", str(root / "changed.txt")],
        [*run_suite, "init", "--root", str(root), "--output", "-", "--force"],
        [sys.executable, "-m", "ci_runner.maintenance", "check-registered-tests", "--root", str(root)],
    ]  # fmt: skip
    notice = (
        f"notice: caches off: no cache directory (HOME is not set and uid {os.getuid()} has no "
        "passwd entry, XDG_CACHE_HOME is not set and CI_RUNNER_CACHE_DIR is not set); every file "
        "is parsed afresh. Set CI_RUNNER_CACHE_DIR=DIR to keep the caches"
    )
    for command in commands:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, cwd=root)
        assert proc.returncode == 0, (command, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert proc.stderr.count("notice: caches off") == 1, proc.stderr
        assert notice in proc.stderr
    assert not (root / ".cache").exists() and not list(root.glob("**/scans-*.json"))


def test_a_cache_switch_that_is_no_boolean_is_exit_2_in_every_command(tmp_path):
    root = make_repo(tmp_path / "repo", FILES)
    env = {**os.environ, "CI_RUNNER_PARSE_CACHE": "maybe", "PYTHONPATH": str(REPO_ROOT)}
    for command in (
        [sys.executable, str(REPO_ROOT / "run_suite.py"), "--hw", "cpu", "--suite", "unit-cpu", "--dry-run"],
        [sys.executable, "-m", "ci_runner.maintenance", "check-registered-tests"],
    ):  # fmt: skip
        proc = subprocess.run(command, env=env, capture_output=True, text=True, cwd=root)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().endswith(
            "environment variable CI_RUNNER_PARSE_CACHE='maybe' is not a boolean: use one of 1, "
            "on, true, yes or 0, false, no, off"
        )


def test_a_cache_directory_that_cannot_be_made_is_one_warning_not_damage(
    repo, tmp_path, capsys, monkeypatch
):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(blocker / "cache"))
    collected(repo)
    err = capsys.readouterr().err
    assert "damaged" not in err
    assert err.startswith(
        f"warning: parse cache not written to {blocker / 'cache'} (Not a directory)"
    )


# ---------------------------------------------------------------------------- parse cache


def parse_cache_file(tmp_path: Path) -> Path:
    (path,) = (tmp_path / "cache").glob("scans-*.json")
    return path


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CI_RUNNER_PARSE_CACHE", raising=False)
    return make_repo(tmp_path / "repo", FILES)


def collected(root: Path):
    found = collect(load_catalog(root), workers=1)
    return found.registrations, found.problems


@pytest.mark.parametrize(
    ("text", "shown"),
    [("Infinity", "inf"), ("NaN", "nan"), ("1e308", "1e+308"), ("-5", "-5")],
)
def test_a_cached_est_time_out_of_range_is_damage_ignored_and_rewritten(
    repo, tmp_path, capsys, text, shown
):
    cold = collected(repo)
    path = parse_cache_file(tmp_path)
    original = path.read_text()
    registration = '"registrations":[{"path":"registered/test_a.py","backend":"cpu","suite":"unit-cpu","est_time":30.0'  # fmt: skip
    assert registration in original
    path.write_text(original.replace(registration, registration[:-4] + text))
    capsys.readouterr()
    assert collected(repo) == cold
    err = capsys.readouterr().err
    expected = "finite number of seconds, 0 or more" if text != "1e308" else "at most 604800"
    assert f"notice: parse cache {path}: damaged, ignored and rewritten: " in err
    assert f"registered/test_a.py: est_time must be a {expected}" in err or expected in err
    assert shown in err
    assert json.loads(path.read_text()) == json.loads(original)  # rewritten as a scan writes it


def test_a_damaged_est_time_in_the_cache_does_not_stop_a_dry_run(repo, tmp_path):
    command = [sys.executable, str(REPO_ROOT / "run_suite.py"), "--root", str(repo)]
    command += ["--hw", "cpu", "--suite", "unit-cpu", "--dry-run", "--scoped-validation"]
    env = {**os.environ, "CI_RUNNER_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run(command, env=env, capture_output=True, check=False)
    path = parse_cache_file(tmp_path)
    path.write_text(path.read_text().replace('"est_time":30.0', '"est_time":Infinity'))
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    assert "Traceback" not in proc.stderr
    assert "registered/test_a.py: est_time must be a finite number of seconds" in proc.stderr
    assert "registered/test_a.py (est 30.0s)" in proc.stdout


def is_damaged(entry: object, rel: str) -> bool:
    try:
        _scan(entry, rel, frozenset({"cpu", "cuda"}))  # type: ignore[arg-type]
    except (DamagedEntry, AttributeError):
        return True
    return False


@PROPERTY
@given(st.data())
def test_any_value_in_a_parse_cache_entry_is_used_only_when_it_is_what_a_scan_writes(
    repo, tmp_path, capsys, data
):
    cold = collected(repo)
    path = parse_cache_file(tmp_path)
    original = json.loads(path.read_text())
    damaged = copy.deepcopy(original)
    rel = data.draw(st.sampled_from(sorted(damaged["entries"])))
    entry = damaged["entries"][rel]
    part = data.draw(st.sampled_from(["registrations", "problems", "entry_problems", "entry"]))
    value = data.draw(JSON)
    if part == "entry":
        damaged["entries"][rel] = value
    elif entry[part] and data.draw(st.booleans()):
        item = entry[part][0]
        item[data.draw(st.sampled_from(sorted(item)) | st.text(max_size=4))] = value
    else:
        entry[part] = value
    path.write_text(json.dumps(damaged))
    if is_damaged(damaged["entries"][rel], rel):  # else a well-formed entry: a scan's, trusted
        assert collected(repo) == cold
        assert collected(repo) == cold  # and again from what the first run rewrote
    dry_run = ["--root", str(repo), "--hw", "cpu", "--suite", "unit-cpu", "--dry-run"]
    assert main([*dry_run, "--scoped-validation"]) == 0  # what was accepted plans and prints
    capsys.readouterr()
    path.write_text(json.dumps(original))


# ---------------------------------------------------------------------------- import facts


IMPACT_FILES = {
    "pkg/__init__.py": "from . import core\n__all__ = ['core']\n",
    "pkg/core.py": "import os\nimport importlib\nM = importlib.import_module('pkg.x' + os.sep)\n",
    "registered/test_k.py": "from pkg import core\nload_jit(cuda_files=['k.cuh'])\n",
    "registered/test_bad.py": "def broken(:\n",
}


@pytest.fixture
def facts_repo(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "facts"
    for rel, text in IMPACT_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    from ci_runner.impact.config import KernelLoader

    loader = KernelLoader("load_jit", ("cuda_files",))
    return SimpleNamespace(root=root, kernel_loaders=(loader,))


def all_facts(config) -> dict:
    cache = FactCache(config)
    facts = {rel: cache.facts(rel) for rel in sorted(IMPACT_FILES)}
    cache.save()
    return facts


@PROPERTY
@given(st.data())
def test_any_value_in_an_import_facts_entry_is_used_only_when_it_is_what_a_parse_writes(
    facts_repo, capsys, data
):
    cold = all_facts(facts_repo)
    path = FactCache(facts_repo).path
    original = json.loads(path.read_text())
    damaged = copy.deepcopy(original)
    rel = data.draw(st.sampled_from(sorted(damaged)))
    value = data.draw(JSON)
    where = data.draw(st.sampled_from(["entry", "stamp", "digest", "facts", "key", "row"]))
    facts = damaged[rel][2]
    if where == "entry":
        damaged[rel] = value
    elif where in ("stamp", "digest", "facts"):
        damaged[rel][["stamp", "digest", "facts"].index(where)] = value
    elif where == "key":
        facts[data.draw(st.sampled_from(sorted(facts)) | st.text(max_size=4))] = value
    else:
        rows = [key for key in sorted(facts) if isinstance(facts[key], list) and facts[key]]
        if rows:  # a file that did not parse has no rows: its error is damaged instead
            facts[data.draw(st.sampled_from(rows))][0] = value
        else:
            facts["error"] = value
    path.write_text(json.dumps(damaged))
    capsys.readouterr()
    found = all_facts(facts_repo)  # never a traceback
    if _entry_problem(damaged[rel]) is not None:  # else a well-formed entry: a parse's, trusted
        assert found == cold
        notice = f"notice: import-facts cache {path}: damaged, ignored and rewritten: {rel}: "
        assert capsys.readouterr().err.startswith(notice)
        assert json.loads(path.read_text()) == original
    path.write_text(json.dumps(original))


def test_a_damaged_import_facts_entry_is_named_in_one_notice(facts_repo, capsys):
    all_facts(facts_repo)
    path = FactCache(facts_repo).path
    entries = json.loads(path.read_text())
    entries["pkg/core.py"][2]["imports"] = [[True, "os", None]]
    entries["pkg/__init__.py"][2]["calls"] = "x"
    path.write_text(json.dumps(entries))
    capsys.readouterr()
    all_facts(facts_repo)
    assert capsys.readouterr().err == (
        f"notice: import-facts cache {path}: damaged, ignored and rewritten: pkg/__init__.py: "
        "'calls' is not a list (and 1 more)\n"
    )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
