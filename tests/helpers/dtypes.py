"""numpy dtypes that only some of the numpy releases pyproject allows have."""

from __future__ import annotations

import numpy as np

#: numpy 2's variable-width string dtype, or None with numpy 1 (no ``np.dtypes`` before
#: 1.25, no ``StringDType`` before 2.0).
STRING_DTYPE = (np.dtypes.StringDType() if hasattr(getattr(np, "dtypes", None), "StringDType")
                else None)
