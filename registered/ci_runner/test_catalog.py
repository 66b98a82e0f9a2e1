"""The suite catalog ([tool.ci-runner] in pyproject.toml): parsing, defaults and every error."""

import os
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import CatalogError, Suite, find_root, load_catalog

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import REPO_ROOT

register_cpu_ci(est_time=3, suite="base-a-test-cpu")

HEAD = '[tool.ci-runner]\nregistered-dir = "registered"\n'
GOOD = '[[tool.ci-runner.suites]]\nname = "unit-cpu"\nhw = "cpu"\n'


def write(tmp_path, text):
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    return tmp_path


def suite_toml(**keys):
    lines = ["[[tool.ci-runner.suites]]"]
    lines += [f"{key.replace('_', '-')} = {value}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


def error_of(tmp_path, text):
    with pytest.raises(CatalogError) as info:
        load_catalog(write(tmp_path, text))
    return str(info.value)


def test_the_projects_own_catalog_loads():
    catalog = load_catalog(REPO_ROOT)
    assert catalog.get("base-a-test-cpu").hw == "cpu"
    assert catalog.registered_dir == "registered"
    assert catalog.renamed("stage-a-test-cpu").name == "base-a-test-cpu"
    assert {s.name for s in catalog.for_hw("cuda")} >= {"base-b-kernel-unit-1-gpu-large"}


def test_defaults_and_all_keys(tmp_path):
    text = (
        HEAD
        + GOOD
        + suite_toml(
            name='"n8"',
            hw='"cuda"',
            nightly="true",
            renamed_from='["old-n8"]',
            gpus_per_file="8",
            timeout_per_file="90.5",
            runner='"8-gpu-h200"',
            job_timeout_minutes="240",
        )
    )
    catalog = load_catalog(write(tmp_path, text))
    assert catalog.root == tmp_path
    assert catalog.registered_path == tmp_path / "registered"
    assert catalog.get("unit-cpu") == Suite(name="unit-cpu", hw="cpu")
    assert catalog.get("n8") == Suite(
        name="n8",
        hw="cuda",
        nightly=True,
        renamed_from=("old-n8",),
        gpus_per_file=8,
        timeout_per_file=90.5,
        runner="8-gpu-h200",
        job_timeout_minutes=240.0,
    )
    assert catalog.get("missing") is None and catalog.renamed("missing") is None
    assert [s.name for s in catalog.for_hw("cpu")] == ["unit-cpu"]


def test_registered_dir_defaults_to_registered(tmp_path):
    assert load_catalog(write(tmp_path, "[tool.ci-runner]\n" + GOOD)).registered_dir == "registered"


def test_missing_file(tmp_path):
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path)
    assert str(info.value) == (
        f"{tmp_path / 'pyproject.toml'}: not found; the suite catalog lives in [tool.ci-runner] (or in ci-runner.toml)"
    )


@pytest.mark.parametrize(("make", "kind"), [(Path.mkdir, "a directory"), (os.mkfifo, "a FIFO")])
def test_a_catalog_that_is_no_regular_file_is_an_error_never_opened(tmp_path, make, kind):
    make(tmp_path / "pyproject.toml")  # a FIFO would block a reader forever
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'pyproject.toml'}: is {kind}") and str(
        info.value
    ).endswith("not a regular file; the suite catalog must be a regular file")


def test_non_utf8_file_is_a_catalog_error(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.ci-runner]\nx = '\xff'\n")
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'pyproject.toml'}: not UTF-8 text: ")


def test_invalid_toml(tmp_path):
    assert error_of(tmp_path, "[tool.ci-runner\n").startswith(
        f"{tmp_path / 'pyproject.toml'}: invalid TOML: "
    )


def test_no_table(tmp_path):
    assert error_of(tmp_path, "[project]\nname = 'x'\n") == (
        f"{tmp_path / 'pyproject.toml'}: no [tool.ci-runner] table (nor a {tmp_path / 'ci-runner.toml'})"
    )


W = "pyproject.toml [tool.ci-runner]"
PER_BACKEND_HINT = (
    '; with [tool.ci-runner.policy] suite-names = "per-backend" each backend may have a suite '
    "of that name"
)


@pytest.mark.parametrize(
    "text,message",
    [
        (HEAD, f"{W}: define at least one [[tool.ci-runner.suites]] entry"),
        (
            "[tool.ci-runner]\nregistered-dir = 3\n" + GOOD,
            f"{W}: registered-dir must be a string, got 3",
        ),
        (
            "[tool.ci-runner]\nsuites = [1]\n",
            f"{W} suites[0]: each [[tool.ci-runner.suites]] entry must be a table",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', colour='"red"'),
            f"{W} suites[0]: unknown key(s) colour; known keys: gpus-per-file, hw, job-timeout-minutes, launcher, name, nightly, renamed-from, runner, runner-key, timeout-per-file",
        ),
        (HEAD + suite_toml(hw='"cpu"'), f"{W} suites[0]: missing required key 'name'"),
        (HEAD + suite_toml(name='"a"'), f"{W} suites[0]: missing required key 'hw'"),
        (HEAD + suite_toml(name="1", hw='"cpu"'), f"{W} suites[0]: name must be a string, got 1"),
        (
            HEAD + suite_toml(name='" "', hw='"cpu"'),
            f"{W} suites[0]: name must be a non-empty name without commas, whitespace or control "
            "characters (it is selected with --suite a,b), got ' '",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"gpu"'),
            f"{W} suites[0] (suite 'a'): hw must be one of amd, cpu, cuda, musa, npu, xpu, got "
            "'gpu' (a new backend needs an extra-markers entry, e.g. "
            '[tool.ci-runner.extra-markers] register_mlx_ci = "mlx")',
        ),
        (
            HEAD + suite_toml(name='"a"', hw="true"),
            f"{W} suites[0] (suite 'a'): hw must be a string, got True",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', nightly='"yes"'),
            f"{W} suites[0] (suite 'a'): nightly must be a boolean, got 'yes'",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', renamed_from='"old"'),
            f"{W} suites[0] (suite 'a'): renamed-from must be a list, got 'old'",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', renamed_from="[1]"),
            f"{W} suites[0] (suite 'a'): each renamed-from entry must be a string, got 1",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', timeout_per_file="0"),
            f"{W} suites[0] (suite 'a'): timeout-per-file must be a positive number of seconds, "
            "at most 604800, got 0",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', timeout_per_file="true"),
            f"{W} suites[0] (suite 'a'): timeout-per-file must be an integer or a number, got True",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', gpus_per_file="-1"),
            f"{W} suites[0] (suite 'a'): gpus-per-file must be an integer from 0 to 1024 or \"all\" "
            "(every GPU of the runner), got -1",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', gpus_per_file="1.5"),
            f"{W} suites[0] (suite 'a'): gpus-per-file must be an integer from 0 to 1024 or \"all\" "
            "(every GPU of the runner), got 1.5",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cuda"', gpus_per_file='"every"'),
            f"{W} suites[0] (suite 'a'): gpus-per-file must be an integer from 0 to 1024 or \"all\" "
            "(every GPU of the runner), got 'every'",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', job_timeout_minutes="-5"),
            f"{W} suites[0] (suite 'a'): job-timeout-minutes must be a positive number of "
            "minutes, at most 10080, got -5",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', runner="3"),
            f"{W} suites[0] (suite 'a'): runner must be a string, got 3",
        ),
        (
            HEAD + GOOD + GOOD,
            f"{W}: suite name 'unit-cpu' is used twice (unit-cpu and unit-cpu){PER_BACKEND_HINT}",
        ),
        (
            HEAD + GOOD + suite_toml(name='"b"', hw='"cpu"', renamed_from='["unit-cpu"]'),
            f"{W}: suite name 'unit-cpu' is used twice (unit-cpu and b){PER_BACKEND_HINT}",
        ),
    ],
)
def test_malformed_catalog_names_file_key_and_value(tmp_path, text, message):
    assert error_of(tmp_path, text) == message


def test_gpus_per_file_all(tmp_path):
    text = HEAD + suite_toml(name='"mg"', hw='"cuda"', gpus_per_file='"all"')
    assert load_catalog(write(tmp_path, text)).get("mg").gpus_per_file == "all"


def test_registration_syntax_keys(tmp_path):
    text = (
        HEAD
        + 'suite-template = "{stage}-test-{runner_config}"\n'
        + 'ignored-arguments = ["in_process_group"]\n'
        + 'file-patterns = ["*.py"]\n'
        + '[tool.ci-runner.extra-markers]\nregister_mlx_ci = "mlx"\n'
        + suite_toml(name='"stage-a-unit-test-mlx"', hw='"mlx"')
    )
    catalog = load_catalog(write(tmp_path, text))
    syntax = catalog.syntax
    assert syntax.markers["register_mlx_ci"] == "mlx"
    assert syntax.markers["register_cuda_ci"] == "cuda"
    assert syntax.template_fields == ("stage", "runner_config")
    assert syntax.suite_template.compose({"stage": "base-b", "runner_config": "1-gpu"}) == (
        "base-b-test-1-gpu"
    )
    assert syntax.suite_template.decompose("base-b-kernel-unit-test-1-gpu") == {
        "stage": "base-b-kernel-unit",
        "runner_config": "1-gpu",
    }
    assert syntax.ignored_arguments == ("in_process_group",)
    assert syntax.arguments[-5:] == (
        "min_gpus",
        "quarantined",
        "stage",
        "runner_config",
        "in_process_group",
    )
    assert catalog.file_patterns == ("*.py",)
    assert catalog.get("stage-a-unit-test-mlx").hw == "mlx"


def test_the_projects_own_catalog_declares_sglangs_template():
    syntax = load_catalog(REPO_ROOT).syntax
    assert syntax.suite_template.text == "{stage}-test-{runner_config}"


@pytest.mark.parametrize(
    "extra,message",
    [
        (
            'suite-templat = "{stage}"\n',
            "unknown key(s) suite-templat; known keys: change-impact, exclude-files, execution, extra-dirs, extra-markers, ",
        ),
        ("suite-template = 3\n", "suite-template must be a string, got 3"),
        (
            'suite-template = "base-{}"\n',
            "suite-template 'base-{}': field {} must be a keyword argument name such as {stage}",
        ),
        (
            'suite-template = "{stage!r}"\n',
            "suite-template '{stage!r}': field {stage} takes no format spec or conversion",
        ),
        (
            'suite-template = "{suite}-x"\n',
            "suite-template '{suite}-x': field {suite} is already an argument of the markers",
        ),
        ('suite-template = "{a}-{a}"\n', "suite-template '{a}-{a}': field {a} appears twice"),
        ('suite-template = "fixed"\n', "suite-template 'fixed' has no {field}"),
        ('suite-template = "{stage"\n', "suite-template '{stage' is not a valid template"),
        (
            'ignored-arguments = "x"\n',
            "ignored-arguments must be a list of argument names, got 'x'",
        ),
        (
            'ignored-arguments = ["nightly"]\n',
            "ignored-arguments: 'nightly' is an argument the runner reads",
        ),
        (
            'ignored-arguments = ["a-b"]\n',
            "ignored-arguments: 'a-b' is not an argument name",
        ),
        ('ignored-arguments = ["g", "g"]\n', "ignored-arguments lists a name twice"),
        ("extra-markers = 3\n", "extra-markers must be a table of marker = backend"),
        (
            '[tool.ci-runner.extra-markers]\nregister_cuda_ci = "mlx"\n',
            "extra-markers: register_cuda_ci is a built-in marker (backend 'cuda')",
        ),
        (
            '[tool.ci-runner.extra-markers]\nregister_mlx_ci = "MLX"\n',
            "extra-markers: register_mlx_ci must name a backend in lower case",
        ),
        (
            '[tool.ci-runner.extra-markers]\n"my-marker" = "mlx"\n',
            "extra-markers: 'my-marker' is not a Python function name",
        ),
        ('file-patterns = "test_*.py"\n', "file-patterns must be a non-empty list of file-name"),
        ('file-patterns = ["test_*"]\n', "file-patterns must be a non-empty list of file-name"),
        ("file-patterns = []\n", "file-patterns must be a non-empty list of file-name"),
    ],
)
def test_malformed_syntax_keys_are_explained(tmp_path, extra, message):
    error = error_of(tmp_path, HEAD + extra + GOOD)
    assert error.startswith(W + ": "), error
    assert message in error


def test_find_root_walks_up_to_the_catalog(tmp_path):
    write(tmp_path, HEAD + GOOD)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'inner'\n")
    assert find_root(deep) == tmp_path.resolve()


def test_find_root_skips_broken_toml_on_the_way(tmp_path):
    write(tmp_path, HEAD + GOOD)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "pyproject.toml").write_text("[broken\n")
    assert find_root(tmp_path / "a") == tmp_path.resolve()


def test_find_root_error_says_what_to_do(tmp_path):
    with pytest.raises(CatalogError) as info:
        find_root(tmp_path)
    message = str(info.value)
    assert message.startswith(
        "no pyproject.toml with a [tool.ci-runner] table (nor a ci-runner.toml) found in "
    )
    assert message.endswith("or any parent; run from inside the repository or pass --root DIR")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            HEAD + GOOD + '\n[tool.ci-runner.execution]\nlauncher = "pyest"\n',
            f"{W}.execution: launcher must be one of 'python', 'pytest', got 'pyest'",
        ),
        (
            HEAD + suite_toml(name='"a"', hw='"cpu"', launcher="1"),
            f"{W} suites[0] (suite 'a'): launcher must be one of 'python', 'pytest', got 1",
        ),
    ],
)
def test_a_bad_launcher_names_where_it_is(tmp_path, text, message):
    assert error_of(tmp_path, text) == message


def test_a_suites_launcher_overrides_the_tables(tmp_path):
    text = (
        HEAD
        + GOOD
        + suite_toml(name='"py"', hw='"cpu"', launcher='"python"')
        + '\n[tool.ci-runner.execution]\nlauncher = "pytest"\n'
    )
    catalog = load_catalog(write(tmp_path, text))
    assert catalog.launcher_of(catalog.get("unit-cpu")) == "pytest"
    assert catalog.launcher_of(catalog.get("py")) == "python"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
