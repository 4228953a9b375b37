"""Backoff with full jitter, and Retry-After parsing: the only arithmetic of waiting."""

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def backoff_delay(tries: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Full jitter (uniform in [0, min(cap, base * 2**tries)]): concurrent pollers spread out
    instead of hitting the provider in lock-step."""
    return (rng or random).uniform(0, min(cap, base * 2 ** max(tries, 0)))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date; None if absent or garbled."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def next_wait(
    tries: int,
    retry_after: float | None,
    *,
    base: float,
    cap: float,
    retry_after_cap: float,
    rng: random.Random | None = None,
) -> float:
    """At least what the provider asked for (up to our cap), at least our own backoff."""
    honoured = min(retry_after, retry_after_cap) if retry_after is not None else 0.0
    return max(honoured, backoff_delay(tries, base, cap, rng))
