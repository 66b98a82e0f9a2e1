"""The ``.verified`` stamp of a cached library: its sha256 is not recomputed while its stat holds.

``library_problem`` hashes a library once, stamps its stat when it matched (only for a file
older than the racy window), and hashes again after any write, replacement or truncation.
"""

import os
import sys
from pathlib import Path

import pytest

import jit_kernel.compiler.cache as cache
from ci_runner import register_cpu_ci

register_cpu_ci(est_time=3, suite="base-a-test-cpu")

BYTES = bytes(range(256)) * 64


def settle(path: Path, when: int) -> None:
    os.utime(path, ns=(when, when))


@pytest.fixture
def library(tmp_path, monkeypatch) -> Path:
    """A recorded 'library' whose stat is settled (no racy window)."""
    monkeypatch.setattr(cache, "FRESH_NS", 0)
    path = tmp_path / "jit_x.so"
    path.write_bytes(BYTES)
    cache.write_record(path, [], {})
    settle(path, 1_000_000_000_000_000_000)
    return path


def hashes(monkeypatch) -> list[Path]:
    seen: list[Path] = []
    real = cache._digest_of

    def counting(path):
        seen.append(path)
        return real(path)

    monkeypatch.setattr(cache, "_digest_of", counting)
    return seen


def test_a_stamped_library_is_not_hashed_again(library, monkeypatch):
    record = cache.read_record(library)
    seen = hashes(monkeypatch)
    assert cache.library_problem(library, record) is None
    assert cache.verified_path(library).is_file() and len(seen) == 1
    assert cache.library_problem(library, record) is None
    assert len(seen) == 1


@pytest.mark.parametrize("how", ["in place", "replaced", "truncated"])
def test_a_changed_library_is_hashed_and_refused(library, how):
    record = cache.read_record(library)
    assert cache.library_problem(library, record) is None  # stamped
    foreign = bytes(reversed(BYTES))
    if how == "in place":
        with open(library, "r+b") as handle:
            handle.write(foreign)
        settle(library, 1_000_000_000_000_000_001)
    elif how == "replaced":
        staged = library.with_name("other")
        staged.write_bytes(foreign)
        settle(staged, 1_000_000_000_000_000_000)  # even the same mtime: another inode
        os.replace(staged, library)
    else:
        with open(library, "r+b") as handle:
            handle.truncate(100)
    problem = cache.library_problem(library, record)
    assert problem is not None and ("sha256 differs" in problem or "bytes" in problem)


def test_a_fresh_library_is_not_stamped(tmp_path):
    path = tmp_path / "jit_y.so"
    path.write_bytes(BYTES)
    cache.write_record(path, [], {})
    assert cache.library_problem(path, cache.read_record(path)) is None
    assert not cache.verified_path(path).exists()


@pytest.mark.parametrize("stamp", ["", "[", "[1, 2]", "null"])
def test_a_damaged_stamp_only_costs_a_hash(library, monkeypatch, stamp):
    cache.verified_path(library).write_text(stamp)
    seen = hashes(monkeypatch)
    assert cache.library_problem(library, cache.read_record(library)) is None
    assert len(seen) == 1


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
