#!/usr/bin/env python3
"""Validate every registered test file exactly as run_suite.py would.

Logic: ci_runner/maintenance/registration_lints.py (reuses the runner's collector; no torch).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ci_runner.maintenance.registration_lints import main_registered_tests

if __name__ == "__main__":
    sys.exit(main_registered_tests())
