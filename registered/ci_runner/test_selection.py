"""Selection by --hw / --suite / --nightly: suites checked, disabled listed, files merged."""

import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.model import DisabledFile, FileToRun, Registration
from ci_runner.select import SelectionError, parse_suite_list, resolve_suites, select

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import make_repo

register_cpu_ci(est_time=3, suite="base-a-test-cpu")


@pytest.fixture
def catalog(tmp_path):
    return load_catalog(make_repo(tmp_path, {}))


def reg(path, backend, suite, est=1.0, nightly=False, disabled=None):
    return Registration(path, backend, suite, est, nightly, disabled, 1, 1)


REGS = [
    reg("registered/test_a.py", "cuda", "unit-1-gpu", 30),
    reg("registered/test_a.py", "cuda", "nightly-1-gpu", 300, nightly=True),
    reg("registered/test_b.py", "cuda", "unit-1-gpu", 10, disabled="flaky on H100"),
    reg("registered/test_c.py", "cuda", "unit-8-gpu", 50),
    reg("registered/test_c.py", "cuda", "unit-1-gpu", 70),
    reg("registered/test_d.py", "cpu", "unit-cpu", 5),
    reg("registered/test_e.py", "cuda", "unit-8-gpu", 20, disabled="needs NVLink"),
    reg("registered/test_e.py", "cuda", "unit-1-gpu", 20),
]


def messages(excinfo):
    return excinfo.value.messages


def test_parse_suite_list_strips_and_deduplicates():
    assert parse_suite_list("a, b,,a ,c") == ["a", "b", "c"]


def test_parse_suite_list_rejects_an_empty_list():
    with pytest.raises(SelectionError) as info:
        parse_suite_list(" , ")
    assert messages(info) == ["--suite ' , ' names no suite; pass one or more names, a,b"]


@pytest.mark.parametrize(
    "names,hw,nightly,expected",
    [
        (
            ["unit-1-gpx"],
            "cuda",
            False,
            "--suite: unknown cuda suite 'unit-1-gpx'; did you mean 'unit-1-gpu'?",
        ),
        (["old-unit-cpu"], "cpu", False, "--suite: suite 'old-unit-cpu' was renamed to 'unit-cpu'"),
        (
            ["unit-cpu"],
            "cuda",
            False,
            "--suite: suite 'unit-cpu' is a cpu suite; run it with --hw cpu",
        ),
        (
            ["nightly-1-gpu"],
            "cuda",
            False,
            "--suite: suite 'nightly-1-gpu' is a nightly suite; add --nightly",
        ),
        (
            ["unit-1-gpu"],
            "cuda",
            True,
            "--suite: suite 'unit-1-gpu' is a per-commit suite; drop --nightly",
        ),
    ],
)
def test_invalid_suite_requests_are_errors(catalog, names, hw, nightly, expected):
    with pytest.raises(SelectionError) as info:
        resolve_suites(catalog, names, hw, nightly)
    assert messages(info) == [expected]


def test_every_invalid_suite_is_reported_at_once(catalog):
    with pytest.raises(SelectionError) as info:
        resolve_suites(catalog, ["nope", "unit-1-gpu", "unit-cpu"], "cuda", False)
    assert len(messages(info)) == 2
    assert "'nope'" in messages(info)[0] and "'unit-cpu'" in messages(info)[1]


def test_selects_backend_suite_and_cadence_and_lists_disabled(catalog):
    selection = select(REGS, catalog, "cuda", ["unit-1-gpu"], nightly=False)
    assert [f.path for f in selection.files] == [
        "registered/test_a.py",
        "registered/test_c.py",
        "registered/test_e.py",
    ]
    assert selection.files[0] == FileToRun("registered/test_a.py", "unit-1-gpu", 30.0, 1)
    assert selection.disabled == (
        DisabledFile("registered/test_b.py", "unit-1-gpu", "flaky on H100"),
    )
    assert selection.est_total == 120
    assert [s.name for s in selection.suites] == ["unit-1-gpu"]


def test_nightly_selection_uses_nightly_registrations(catalog):
    selection = select(REGS, catalog, "cuda", ["nightly-1-gpu"], nightly=True)
    assert selection.files == (FileToRun("registered/test_a.py", "nightly-1-gpu", 300.0, 1),)


def test_file_in_several_selected_suites_runs_once_with_max_est_and_max_gpus(catalog):
    selection = select(REGS, catalog, "cuda", ["unit-8-gpu", "unit-1-gpu"], nightly=False)
    by_path = {f.path: f for f in selection.files}
    assert len(selection.files) == 3
    # test_c: 50 s in unit-8-gpu, 70 s in unit-1-gpu -> 70 s, suite unit-1-gpu, 8 GPUs.
    assert by_path["registered/test_c.py"] == FileToRun(
        "registered/test_c.py", "unit-1-gpu", 70.0, 8
    )
    # test_e is disabled in unit-8-gpu but enabled in unit-1-gpu: it runs, and is not listed.
    assert by_path["registered/test_e.py"].suite == "unit-1-gpu"
    assert [d.path for d in selection.disabled] == ["registered/test_b.py"]


def test_equal_est_in_two_suites_takes_the_first_requested_suite(catalog):
    regs = [
        reg("registered/test_x.py", "cpu", "unit-cpu", 5),
        reg("registered/test_x.py", "cpu", "extra-cpu", 5),
    ]
    first = select(regs, catalog, "cpu", ["extra-cpu", "unit-cpu"], nightly=False)
    assert first.files[0].suite == "extra-cpu"


def test_suite_selecting_no_enabled_file_is_an_error(catalog):
    with pytest.raises(SelectionError) as info:
        select(REGS, catalog, "cpu", ["unit-cpu", "extra-cpu"], nightly=False)
    assert messages(info) == [
        "suite 'extra-cpu' selects no enabled file; register files for it, "
        "or pass --allow-empty if that is intended"
    ]


def test_suite_with_only_disabled_files_is_an_error_naming_the_count(catalog):
    regs = [reg("registered/test_x.py", "cpu", "unit-cpu", disabled="broken")]
    with pytest.raises(SelectionError) as info:
        select(regs, catalog, "cpu", ["unit-cpu"], nightly=False)
    assert messages(info) == [
        "suite 'unit-cpu' selects no enabled file (1 disabled); register files for it, "
        "or pass --allow-empty if that is intended"
    ]


def test_allow_empty_accepts_an_empty_selection(catalog):
    selection = select([], catalog, "cpu", ["unit-cpu"], nightly=False, allow_empty=True)
    assert selection.files == () and selection.disabled == ()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
