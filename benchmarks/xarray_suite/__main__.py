"""``python -m benchmarks.xarray_suite``: see benchmarks/xarray_suite/run.py."""

import sys

from benchmarks.xarray_suite.run import main

sys.exit(main())
