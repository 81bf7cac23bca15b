"""The chi-square quantile, for the upper confidence limit of a standard deviation estimated from a few pilot runs
(study/plan.py; scipy is not a dependency of rtclab).

The chi-square CDF with k degrees of freedom is P(k/2, x/2), the regularised lower incomplete gamma function, evaluated
by its series for x < a + 1 and by its continued fraction (Lentz's method) otherwise, as in Numerical Recipes' gser and
gcf, to double precision; the quantile is found by Newton's method on the CDF inside a bracket (tdist.invert_cdf). The
tests check it against the closed forms for k = 1 (erf) and k = 2 (exponential) and against published table values."""

from __future__ import annotations

import math
from functools import lru_cache

from .tdist import invert_cdf


def _gamma_series(a: float, x: float) -> float:
    term = total = 1.0 / a
    ap = a
    for _ in range(10_000):
        ap += 1.0
        term *= x / ap
        total += term
        if abs(term) < abs(total) * 1e-16:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_cf(a: float, x: float) -> float:
    """Q(a, x) = 1 - P(a, x) by its continued fraction."""
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = d if abs(d) > tiny else tiny
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def gammainc(a: float, x: float) -> float:
    """The regularised lower incomplete gamma function P(a, x)."""
    if a <= 0:
        raise ValueError(f"a must be positive (got {a})")
    if x <= 0.0:
        return 0.0
    if x < a + 1.0:
        return _gamma_series(a, x)
    return 1.0 - _gamma_cf(a, x)


def chi2_pdf(x: float, df: float) -> float:
    """The chi-square density with df degrees of freedom (x > 0)."""
    k = df / 2.0
    return math.exp((k - 1.0) * math.log(x) - x / 2.0 - k * math.log(2.0) - math.lgamma(k)) if x > 0.0 else 0.0


def chi2_cdf(x: float, df: float) -> float:
    """P(X <= x) for the chi-square distribution with df degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive (got {df})")
    return gammainc(df / 2.0, x / 2.0)


@lru_cache(maxsize=1024)
def chi2_quantile(p: float, df: float) -> float:
    """The p-quantile (0 < p < 1) of the chi-square distribution with df degrees of freedom."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1) (got {p})")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive (got {df})")
    return invert_cdf(lambda x: chi2_cdf(x, df), lambda x: chi2_pdf(x, df), p, max(1.0, df))
