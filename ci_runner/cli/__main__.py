"""``python -m ci_runner.cli --hw HW --suite SUITE ...``: the same command as ``run_suite.py``."""

import sys

from ci_runner.cli.command import main

if __name__ == "__main__":
    sys.exit(main())
