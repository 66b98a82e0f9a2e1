"""registered/jit/repo_root.py's twin for the files of this directory (Python looks beside the
script): puts the repository root on ``sys.path``; import it before the root's packages."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(1, str(ROOT))
