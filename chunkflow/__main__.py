"""``python -m chunkflow``: the command line (see :mod:`chunkflow.cli`)."""

import sys

from chunkflow.cli import main

if __name__ == "__main__":
    sys.exit(main())
