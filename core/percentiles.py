"""Nearest-rank percentiles, for figures both apps print (the dashboard, the evaluation harness)."""

import math


def percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile; None for no data (a dashboard shows a dash, not a zero)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]
