#!/usr/bin/env python3
"""Fail when a register_*_ci(...) call sits inside a package (tests belong under registered/).

Logic: ci_runner/maintenance/registration_lints.py (reuses the runner's collector; no torch).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ci_runner.maintenance.registration_lints import main_no_tests_in_package

if __name__ == "__main__":
    sys.exit(main_no_tests_in_package())
