#!/usr/bin/env python3
"""Aggregate check: merge every shard's JUnit XML and verify each planned file ran exactly once.

Usage: python scripts/merge_junit.py --plan plans/ --junit-dir reports/ --out merged.xml
Logic: ci_runner/maintenance/junit_merge.py.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ci_runner.maintenance.junit_merge import main

if __name__ == "__main__":
    sys.exit(main())
