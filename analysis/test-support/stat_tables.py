"""The printed statistics tables the sample-size tests check the planner against (any statistics textbook's), and
the textbook formulas they use; shared by test_study_plan.py and test_study_plan_pilots.py."""

from __future__ import annotations

import math

import numpy as np

# Printed tables (any statistics textbook): Student's t quantiles by degrees of freedom ...
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 18: 2.101}
T80 = {1: 1.376, 2: 1.061, 3: 0.978, 4: 0.941, 5: 0.920, 6: 0.906, 7: 0.896, 8: 0.889, 9: 0.883, 10: 0.879,
       11: 0.876, 12: 0.873, 13: 0.870, 14: 0.868, 18: 0.862}
# ... and the chi-square's lower 20 % points (the table's "area to the right 0.80" column).
CHI2_020 = {1: 0.0642, 2: 0.446, 3: 1.005, 4: 1.649, 5: 2.343, 9: 5.380, 10: 6.179}
Z975, Z80 = 1.959964, 0.841621  # the normal quantiles of the textbook formula n = ((z(1-a/2) + z(power)) s / d)^2


def by_table(d: float, s_upper: float) -> int:
    """The fewest n (2..11) with (t(0.975, n-1) + t(0.80, n-1)) s / sqrt(n) <= d, from the printed t table."""
    return next(n for n in range(2, 12) if (T975[n - 1] + T80[n - 1]) * s_upper / math.sqrt(n) <= d)


def sxx(xs: list[float]) -> float:
    return float(np.sum((np.array(xs) - np.mean(xs)) ** 2))
