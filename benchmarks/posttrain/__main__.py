"""``python -m benchmarks.posttrain sft|grpo --model DIR --data DIR --output DIR [...]``."""

import sys

from benchmarks.posttrain.train import main
from policies.config_cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(main))
