"""Small statistics for the benchmark report: medians, percentiles and
the spread of a set of runs, and ratios between racks and plain TCP."""

import statistics


def percentile(values, p):
    """The p-th percentile (0-100) by linear interpolation."""
    values = sorted(values)
    if not values:
        raise ValueError("no values")
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def summary(values):
    """Median, min, max and count of a set of runs."""
    return {"median": statistics.median(values), "min": min(values),
            "max": max(values), "n": len(values)}


def ratio(racks, plain):
    """racks / plain of two medians; None when plain is zero."""
    return racks / plain if plain else None


def spread(values):
    """(max - min) / median, as a fraction: how much the runs disagree."""
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med else 0.0
