"""``python -m benchmarks.libero``: run the benchmark's command line (see :func:`benchmarks.libero.main`)."""

import sys

from benchmarks.libero import main
from policies.config_cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(main))
