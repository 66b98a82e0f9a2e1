#!/usr/bin/env python3
"""Every catalog suite is run by some workflow, and every suite a workflow runs is in the catalog.

A suite that no workflow runs is a silent drop. Logic: ci_runner/maintenance/workflow_coverage.py (PyYAML).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ci_runner.maintenance.workflow_coverage import main

if __name__ == "__main__":
    sys.exit(main())
