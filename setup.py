"""setuptools' part beyond pyproject.toml: ``a1_ci_runner_record.pth`` at the top of site-packages.

Python runs a ``.pth`` file's ``import`` line in every process that starts in the environment;
this one starts ``--record-deps``'s recorder where the runner asked for it
(:mod:`ci_runner.execution.record_child`), as coverage.py ships its own for the same reason.
"""

import zipfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = Path("ci_runner/execution/a1_ci_runner_record.pth")


class BuildPyWithPth(build_py):
    """A wheel: the file goes to the top of the built tree, beside the packages."""

    def run(self) -> None:
        super().run()
        self.copy_file(str(PTH), str(Path(self.build_lib) / PTH.name))


class EditableWheelWithPth(editable_wheel):
    """An editable install (``pip install -e``): the file is added to the editable wheel."""

    def run(self) -> None:
        super().run()
        for wheel in Path(self.dist_dir).glob("*editable*.whl"):
            with zipfile.ZipFile(wheel, "a") as archive:
                if PTH.name not in archive.namelist():
                    archive.write(PTH, PTH.name)


setup(cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
