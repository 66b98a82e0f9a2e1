"""Puts the repository root on ``sys.path``: import it before the repository's packages.

``python registered/<dir>/<file>.py`` puts only the file's own directory on the path, so the
packages at the root that are not installed (``testing``, ``benchmarks``, ``tools``,
``verification``) did not import without ``PYTHONPATH``; ``run_suite.py`` sets it, a person
following the docs does not. The root goes right after the file's directory, so the checkout's
own packages win over installed copies. One such module per directory that holds registered
files (Python looks for it beside the script); ``test_run_as_script.py`` checks them. The root
is a literal ``parents[N]``, which the change analysis follows (it bounds what the file imports).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(1, str(ROOT))
