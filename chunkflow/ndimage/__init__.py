"""scipy.ndimage's functions by their names and signatures, exact on chunked arrays.

Replace ``scipy.ndimage`` with ``chunkflow.ndimage``: each function takes scipy's
arguments and gives scipy's result on the whole array, bit for bit, however the
array is chunked, in bounded memory. The input may be a chunkflow Array, a path or
URL, or a numpy array; image results go to ``out=`` (see
:mod:`chunkflow.ndimage.arguments` for chunkflow's job keywords).

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage as scipy_ndimage
>>> from chunkflow import ndimage
>>> image = np.random.default_rng(0).random((30, 40))
>>> smooth = ndimage.gaussian_filter(image, 2)
>>> bool((smooth[...] == scipy_ndimage.gaussian_filter(image, 2)).all())
True
"""

from chunkflow.graph.distance import distance_transform_edt
from chunkflow.ndimage.filters import (
    convolve,
    correlate,
    gaussian_filter,
    gaussian_gradient_magnitude,
    gaussian_laplace,
    generic_filter,
    laplace,
    prewitt,
    sobel,
    uniform_filter,
)
from chunkflow.ndimage.holes import binary_fill_holes
from chunkflow.ndimage.labelling import find_objects, label
from chunkflow.ndimage.measurements import (
    center_of_mass,
    extrema,
    histogram,
    labeled_comprehension,
    maximum,
    maximum_position,
    mean,
    median,
    minimum,
    minimum_position,
    standard_deviation,
    sum,
    sum_labels,
    variance,
)
from chunkflow.ndimage.morphology import (
    binary_closing,
    binary_dilation,
    binary_erosion,
    binary_opening,
    grey_closing,
    grey_dilation,
    grey_erosion,
    grey_opening,
)
from chunkflow.ndimage.order import (
    maximum_filter,
    median_filter,
    minimum_filter,
    percentile_filter,
    rank_filter,
)

__all__ = [
    "binary_closing",
    "binary_dilation",
    "binary_erosion",
    "binary_fill_holes",
    "binary_opening",
    "center_of_mass",
    "convolve",
    "correlate",
    "distance_transform_edt",
    "extrema",
    "find_objects",
    "gaussian_filter",
    "gaussian_gradient_magnitude",
    "gaussian_laplace",
    "generic_filter",
    "grey_closing",
    "grey_dilation",
    "grey_erosion",
    "grey_opening",
    "histogram",
    "label",
    "labeled_comprehension",
    "laplace",
    "maximum",
    "maximum_filter",
    "maximum_position",
    "mean",
    "median",
    "median_filter",
    "minimum",
    "minimum_filter",
    "minimum_position",
    "percentile_filter",
    "prewitt",
    "rank_filter",
    "sobel",
    "standard_deviation",
    "sum",
    "sum_labels",
    "uniform_filter",
    "variance",
]
