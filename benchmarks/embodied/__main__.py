"""``python -m benchmarks.embodied``: run the benchmark's command line (see :func:`benchmarks.embodied.main`)."""

import sys

from benchmarks.embodied import main
from policies.config_cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(main))
