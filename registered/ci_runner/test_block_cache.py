"""The block cache of --record-deps: a source's blocks read back from the disk are those
``parse_blocks`` gives; any other entry (property test over JSON values) is damaged, parsed
again and rewritten with a notice; new rules (``blocks.py``) start afresh; no cache directory or
an unwritable one only costs time."""

import hashlib
import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_runner import cache_location as location_module
from ci_runner import register_cpu_ci
from ci_runner.cache_location import CacheLocation
from ci_runner.impact import block_cache as cache_module
from ci_runner.impact import blocks as blocks_module
from ci_runner.impact.block_cache import BlockCache, _encode
from ci_runner.impact.blocks import parse_blocks

register_cpu_ci(est_time=5, suite="base-a-test-cpu")

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    (REPO_ROOT / "ci_runner" / "impact" / "blocks.py").read_bytes(),
    b"class A:\n    def f(self):\n        return 1\n\n    @property\n    def g(self):\n"
    b"        def inner():\n            return 2\n        return inner\n",
    b"x = 1\n",
    b"def broken(:\n",  # does not parse: cached as such
    b"\xef\xbb\xbfimport os\n",
]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


def _digest(source: bytes) -> str:
    return hashlib.sha256(source).hexdigest()


def _cache(tmp_path: Path) -> BlockCache:
    return BlockCache({"CI_RUNNER_CACHE_DIR": str(tmp_path / "cache")})


@pytest.mark.parametrize("source", SOURCES)
def test_warm_blocks_are_the_parsed_blocks(tmp_path, monkeypatch, source):
    cold = _cache(tmp_path).blocks(source, _digest(source))
    assert cold == parse_blocks(source)
    assert (_cache(tmp_path).directory / f"{_digest(source)}.json").is_file()

    def no_parse(_source):
        raise AssertionError("a cached source is parsed again")

    monkeypatch.setattr(cache_module, "parse_blocks", no_parse)
    assert _cache(tmp_path).blocks(source, _digest(source)) == cold


def test_new_rules_or_interpreter_start_afresh(tmp_path, monkeypatch):
    before = _cache(tmp_path).directory
    changed = tmp_path / "blocks.py"
    changed.write_bytes(Path(blocks_module.__file__).read_bytes() + b"# another rule\n")
    monkeypatch.setattr(blocks_module, "__file__", str(changed))
    assert _cache(tmp_path).directory != before
    monkeypatch.undo()
    monkeypatch.setattr(sys, "version_info", (3, 99, 0))
    assert _cache(tmp_path).directory != before


@settings(max_examples=60, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(value=JSON | st.sampled_from([{"blocks": [["<module>", "0" * 64, [1]]] * 2}]))
def test_any_other_entry_is_damaged_and_rewritten(tmp_path, capsys, value):
    source = SOURCES[1]
    cache = _cache(tmp_path)
    entry = cache.directory / f"{_digest(source)}.json"
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text(json.dumps(value), encoding="utf-8")
    capsys.readouterr()
    assert cache.blocks(source, _digest(source)) == parse_blocks(source)
    assert "notice: block cache" in capsys.readouterr().err
    assert json.loads(entry.read_text(encoding="utf-8")) == _encode(parse_blocks(source))


def test_undecodable_entry_is_parsed_again(tmp_path):
    source = SOURCES[2]
    cache = _cache(tmp_path)
    entry = cache.directory / f"{_digest(source)}.json"
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"\xff\xfe not utf-8")
    assert cache.blocks(source, _digest(source)) == parse_blocks(source)


def test_no_cache_directory_or_an_unwritable_one_only_costs_time(tmp_path, monkeypatch, capsys):
    source = SOURCES[1]
    nowhere = CacheLocation(None, "HOME is not set and uid 4242 has no passwd entry")
    monkeypatch.setattr(cache_module, "cache_location", lambda environ: nowhere)
    monkeypatch.setattr(location_module, "_announced", set())  # once a process: not yet here
    off = BlockCache()
    assert off.directory is None
    assert off.blocks(source, _digest(source)) == parse_blocks(source)
    assert "caches off" in capsys.readouterr().err
    monkeypatch.undo()
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    cache = BlockCache({"CI_RUNNER_CACHE_DIR": str(blocked)})
    assert cache.blocks(source, _digest(source)) == parse_blocks(source)
    assert not list(tmp_path.glob("**/*.tmp"))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
