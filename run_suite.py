#!/usr/bin/env python3
"""Entry point: ``python run_suite.py --hw cuda --suite base-b-kernel-unit-1-gpu-large``.

Thin on purpose: everything lives in :mod:`ci_runner.cli`.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ci_runner.cli import main

if __name__ == "__main__":
    sys.exit(main())
