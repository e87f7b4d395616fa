"""``python -m benchmarks.calvin``: run the benchmark's command line (see :func:`benchmarks.calvin.main`)."""

import sys

from benchmarks.calvin import main
from policies.config_cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(main))
