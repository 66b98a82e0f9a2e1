"""The content-keyed parse cache of discovery: a warm run parses nothing and finds the same
registrations and problems; a changed file, a damaged cache file or entry, another syntax and a
disabled cache all fall back to parsing, never to a traceback or a stale result."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.collect import collect, discovery, parse_cache
from ci_runner.collect.parse_cache import ENABLED_VARIABLE, FORMAT, cache_directory

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
MAIN = '\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n'
HEAD = "import sys\n\nimport pytest\n\nfrom ci_runner import register_cpu_ci\n\n"
FILES = {
    "registered/test_a.py": HEAD + 'register_cpu_ci(est_time=3, suite="unit")\n' + MAIN,
    "registered/test_b.py": HEAD + 'register_cpu_ci(est_time=4, suite="unit")\n' + MAIN,
    "registered/test_no_main.py": HEAD + 'register_cpu_ci(est_time=5, suite="unit")\n',
    "registered/test_broken.py": HEAD + "register_cpu_ci(est_time=1, suite='unit'\n",
    "registered/test_silent.py": "VALUE = 1\n",
}
CATALOG = '[tool.ci-runner]\nregistered-dir = "registered"\n\n[[tool.ci-runner.suites]]\n'
CATALOG += 'name = "unit"\nhw = "cpu"\ngpus-per-file = 0\n'


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(ENABLED_VARIABLE, raising=False)
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "pyproject.toml").write_text(CATALOG)
    return root


@pytest.fixture
def scans(monkeypatch):
    """The paths discovery parses (scan_file calls), in this process."""
    seen: list[str] = []
    real = discovery.scan_file

    def counting(data, rel_path, syntax):
        seen.append(rel_path)
        return real(data, rel_path, syntax)

    monkeypatch.setattr(discovery, "scan_file", counting)
    return seen


def run(root: Path):
    found = collect(load_catalog(root), workers=1)
    return found.registrations, found.problems


def cache_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").glob("scans-*.json"))


def test_warm_run_parses_nothing_and_finds_the_same(repo, scans):
    cold = run(repo)
    parsed_cold = sorted(scans)
    scans.clear()
    warm = run(repo)
    assert warm == cold
    assert scans == []
    # test_silent.py never mentions a marker, so it is not parsed even cold
    assert parsed_cold == sorted(p for p in FILES if not p.endswith("test_silent.py"))
    messages = [p.message for p in cold[1]]
    assert any("syntax error" in m for m in messages)
    assert any("no `if __name__" in m for m in messages)  # entry-point problems are cached
    assert any("no register_<backend>_ci" in m for m in messages)


def test_a_changed_file_is_parsed_again(repo, scans):
    run(repo)
    scans.clear()
    (repo / "registered/test_b.py").write_text(
        HEAD + 'register_cpu_ci(est_time=44, suite="unit")\n' + MAIN
    )
    registrations, _ = run(repo)
    assert scans == ["registered/test_b.py"]
    assert {r.path: r.est_time for r in registrations}["registered/test_b.py"] == 44


def test_a_corrupt_cache_file_is_ignored_and_rewritten(repo, scans, tmp_path):
    cold = run(repo)
    (path,) = cache_files(tmp_path)
    path.write_bytes(b"\x00{not json")
    scans.clear()
    assert run(repo) == cold
    assert len(scans) == 4
    assert json.loads(path.read_text())["format"] == FORMAT  # rewritten whole


def test_a_damaged_entry_is_a_miss_for_that_file_only(repo, scans, tmp_path):
    cold = run(repo)
    (path,) = cache_files(tmp_path)
    data = json.loads(path.read_text())
    data["entries"]["registered/test_a.py"]["registrations"][0]["est_time"] = "three"
    data["entries"]["registered/test_b.py"]["problems"] = [{"path": 1}]
    data["entries"]["registered/test_no_main.py"] = ["not", "an", "entry"]
    path.write_text(json.dumps(data))
    scans.clear()
    assert run(repo) == cold
    assert sorted(scans) == [
        "registered/test_a.py",
        "registered/test_b.py",
        "registered/test_no_main.py",
    ]
    scans.clear()
    assert run(repo) == cold and scans == []  # the damaged entries were rewritten


def test_another_syntax_uses_another_cache_file(repo, scans, tmp_path):
    run(repo)
    text = (repo / "pyproject.toml").read_text()
    (repo / "pyproject.toml").write_text(
        text.replace(
            "[[tool", '[tool.ci-runner.extra-markers]\nregister_mlx_ci = "mlx"\n\n[[tool', 1
        )
    )
    scans.clear()
    run(repo)
    assert len(scans) == 4 and len(cache_files(tmp_path)) == 2


def test_only_the_most_recent_cache_files_are_kept(repo, tmp_path, monkeypatch):
    monkeypatch.setattr(parse_cache, "KEPT_FILES", 2)
    cache = tmp_path / "cache"
    cache.mkdir()
    for age, name in enumerate(["scans-old1.json", "scans-old2.json", "scans-new.json"]):
        (cache / name).write_text("{}")
        os.utime(cache / name, (1000 + age, 1000 + age))
    run(repo)  # writes this syntax's file, the newest
    kept = sorted(path.name for path in cache.glob("scans-*.json"))
    assert len(kept) == 2 and "scans-new.json" in kept and "scans-old1.json" not in kept


def test_disabled_cache_parses_every_time_and_writes_nothing(repo, scans, tmp_path, monkeypatch):
    monkeypatch.setenv(ENABLED_VARIABLE, "0")
    assert cache_directory() is None
    first = run(repo)
    second = run(repo)
    assert first == second and len(scans) == 8
    assert not (tmp_path / "cache").exists()


def test_cache_location_follows_xdg_and_can_be_moved():
    assert cache_directory({"XDG_CACHE_HOME": "/x"}) == Path("/x/ci-runner")
    assert cache_directory({"CI_RUNNER_CACHE_DIR": "/y", "XDG_CACHE_HOME": "/x"}) == Path("/y")
    assert cache_directory({ENABLED_VARIABLE: "off", "CI_RUNNER_CACHE_DIR": "/y"}) is None


def test_unwritable_cache_is_a_warning_and_the_run_still_works(repo, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(blocker / "cache"))
    registrations, _ = run(repo)
    assert len(registrations) == 3
    assert "warning: parse cache not written" in capsys.readouterr().err


def test_cli_rejects_a_bad_switch_value_and_runs_warm(repo, tmp_path):
    command = [sys.executable, str(ROOT / "run_suite.py"), "--root", str(repo)]
    command += ["--hw", "cpu", "--suite", "unit", "--dry-run"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    env["CI_RUNNER_CACHE_DIR"] = str(tmp_path / "cache")
    bad = subprocess.run(
        command, env={**env, ENABLED_VARIABLE: "maybe"}, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert ENABLED_VARIABLE in bad.stderr
    init = [
        sys.executable,
        str(ROOT / "run_suite.py"),
        "init",
        "--root",
        str(repo),
        "--output",
        "-",
    ]
    bad_init = subprocess.run(
        init, env={**env, ENABLED_VARIABLE: "maybe"}, capture_output=True, text=True
    )
    assert bad_init.returncode == 2 and "Traceback" not in bad_init.stderr
    assert ENABLED_VARIABLE in bad_init.stderr
    cold = subprocess.run(command, env=env, capture_output=True, text=True)
    warm = subprocess.run(command, env=env, capture_output=True, text=True)
    assert cold.returncode == warm.returncode == 2  # the broken files block the run
    assert (cold.stdout, cold.stderr) == (warm.stdout, warm.stderr)
    assert "syntax error" in warm.stderr and len(cache_files(tmp_path)) == 1


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))


# ---------------------------------------------------------------- the stat shortcut
# Files here were written (and their ctime set) just now, so the tests that need a recorded stat
# set RACY_SECONDS to 0: every stat is then old enough to record.


@pytest.fixture
def reads(monkeypatch):
    """The files discovery reads to hash them (read_regular calls), in this process."""
    seen: list[str] = []
    real = discovery.read_regular

    def counting(path, *args, **kwargs):
        seen.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(discovery, "read_regular", counting)
    return seen


def test_settled_files_are_not_read_again(repo, reads, scans, monkeypatch):
    monkeypatch.setattr(parse_cache, "RACY_SECONDS", 0)
    cold = run(repo)  # records each file's digest and stat
    reads.clear()
    scans.clear()
    assert run(repo) == cold
    assert reads == [] and scans == []


def test_a_changed_file_with_its_old_size_and_times_is_still_seen(repo, reads, scans, monkeypatch):
    monkeypatch.setattr(parse_cache, "RACY_SECONDS", 0)
    run(repo)
    reads.clear()
    run(repo)
    assert reads == []  # the shortcut is in use
    target = repo / "registered/test_a.py"
    before = target.stat()
    target.write_text(target.read_text().replace("est_time=3", "est_time=7"))  # same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # the ctime still moves
    registrations, _ = run(repo)
    assert {r.path: r.est_time for r in registrations}["registered/test_a.py"] == 7
    assert "registered/test_a.py" in scans


def test_recent_files_are_hashed_every_time(repo, reads):
    run(repo)  # files written just now: too recent, no stat is recorded
    reads.clear()
    run(repo)
    assert "test_a.py" in reads
