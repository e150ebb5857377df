"""``python -m harness.report``: the report tools (build, compare, side-by-side, merge), also ``abspos-claims report``."""

import sys

from harness.report.cli import main

sys.exit(main(sys.argv[1:]))
