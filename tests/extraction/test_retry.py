import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from core.retry import backoff_delay, next_wait, parse_retry_after

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_it_reads_retry_after_in_seconds_and_as_an_http_date():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(format_datetime(NOW + timedelta(seconds=90), usegmt=True), now=NOW) == 90.0
    assert parse_retry_after(format_datetime(NOW - timedelta(seconds=5), usegmt=True), now=NOW) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_it_never_waits_less_than_retry_after_nor_more_than_the_cap():
    rng = random.Random(1)
    waits = [next_wait(0, 30, base=1, cap=10, retry_after_cap=60, rng=rng) for _ in range(100)]
    assert min(waits) >= 30
    assert next_wait(0, 10_000, base=1, cap=10, retry_after_cap=60, rng=rng) == 60


def test_it_bounds_every_backoff_by_the_cap_whatever_the_number_of_tries():
    rng = random.Random(2)
    assert all(0 <= backoff_delay(tries, 2, 120, rng) <= 120 for tries in range(200))


def test_it_spreads_concurrent_pollers_instead_of_lock_step():
    delays = [round(backoff_delay(5, 1, 60, random.Random(seed)), 3) for seed in range(50)]
    assert len(set(delays)) == 50  # fifty pollers, fifty different wake-up times
    assert max(delays) - min(delays) > 20  # spread over most of the window [0, 32]


def test_it_grows_the_window_exponentially():
    rng = random.Random(3)
    means = [sum(backoff_delay(t, 1, 1000, rng) for _ in range(2000)) / 2000 for t in (0, 3, 6)]
    assert means[0] < 1 < means[1] < 8 < means[2]
