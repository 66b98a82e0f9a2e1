"""``python -m jit_kernel.benchmark compare|plot`` (see :mod:`jit_kernel.benchmark.cli`)."""

import sys

from jit_kernel.benchmark.cli import main

sys.exit(main())
