#!/usr/bin/env python3
"""Compare declared est_time with measured p90 run times; --check gates CI, --write rewrites.

Usage: python scripts/update_est_time.py --timings timings/ [--check | --write]
Logic: ci_runner/maintenance/est_time.py.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ci_runner.maintenance.est_time import main

if __name__ == "__main__":
    sys.exit(main())
