"""Two budgets per service account (portal/rate_limits.py): submissions and the reads that poll them, counted in the
profile's own cache (files, or Redis on the production profile), and the RateLimit fields on every answer."""

import pytest
from django.conf import settings
from django.core.cache import cache

from extraction.accounts import ServiceAccount
from portal.api import THROTTLE
from tests import pdfs
from tests.extraction.test_api import auth, post_pdf, token  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock():
    return [1_000_000.0]


@pytest.fixture
def small_budgets(monkeypatch, clock):
    """2 submissions and 5 reads a minute, on a clock the test moves (the counts are still the cache's)."""
    cache.clear()
    for budget, quota in ((THROTTLE.submissions, 2), (THROTTLE.reads, 5)):
        monkeypatch.setattr(budget, "num_requests", quota)
        monkeypatch.setattr(budget, "clock", lambda: clock[0])


def test_polling_reads_do_not_spend_the_submission_budget(client, token, tmp_path, small_budgets):  # noqa: F811
    reads = [client.get("/api/v1/jobs", **auth(token)).status_code for _ in range(5)]
    submissions = [post_pdf(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes()).status_code for _ in range(3)]
    assert (reads, submissions) == ([200] * 5, [202, 202, 429])


def test_reads_past_their_own_budget_are_429_while_a_submission_still_passes(client, token, tmp_path, small_budgets):  # noqa: F811
    reads = [client.get("/api/v1/jobs", **auth(token)).status_code for _ in range(6)]
    assert reads == [200] * 5 + [429]
    assert post_pdf(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes()).status_code == 202


def test_every_counted_answer_says_its_policy_and_what_is_left(client, token, tmp_path, small_budgets):  # noqa: F811
    read = client.get("/api/v1/jobs", **auth(token))
    assert read["RateLimit-Policy"] == '"reads";q=5;w=60' and read["RateLimit"] == '"reads";r=4;t=60'
    missing = client.get("/api/v1/jobs/999", **auth(token))
    assert (missing.status_code, missing["RateLimit"]) == (404, '"reads";r=3;t=60')
    submitted = post_pdf(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes())
    assert submitted["RateLimit-Policy"] == '"submissions";q=2;w=60'
    assert submitted["RateLimit"] == '"submissions";r=1;t=60'


def test_a_429_says_the_budget_is_spent_and_when_to_come_back(client, token, tmp_path, small_budgets, clock):  # noqa: F811
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    post_pdf(client, token, data)
    clock[0] += 20
    post_pdf(client, token, data)
    clock[0] += 15
    refused = post_pdf(client, token, data)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
    assert (refused["RateLimit"], refused["Retry-After"]) == ('"submissions";r=0;t=25', "25")
    clock[0] += 25  # the first submission leaves the window
    again = post_pdf(client, token, data)
    assert (again.status_code, again["RateLimit"]) == (202, '"submissions";r=0;t=20')


def test_a_request_refused_before_any_budget_carries_no_ratelimit_fields(client):
    response = client.get("/api/v1/jobs")
    assert response.status_code == 401 and "RateLimit" not in response


def test_the_public_log_endpoints_spend_the_read_budget_of_the_callers_address(client, small_budgets):
    answers = [client.get("/api/v1/log/checkpoint") for _ in range(6)]
    assert [a.status_code for a in answers] == [404] * 5 + [429]
    assert answers[0]["RateLimit"] == '"reads";r=4;t=60'


def test_the_counts_live_in_the_profiles_shared_cache(client, token, small_budgets):  # noqa: F811
    """Files on the embedded profile, Redis on the production one: never a process's memory, which each gunicorn
    worker would have its own of."""
    client.get("/api/v1/jobs", **auth(token))
    account = ServiceAccount.objects.get()
    assert len(cache.get(f"throttle_reads_account-{account.pk}")) == 1
    assert cache.get(f"throttle_submissions_account-{account.pk}") is None
    backend = settings.CACHES["default"]["BACKEND"]
    assert backend.endswith("RedisCache" if settings.Q_CLUSTER.get("redis") else "FileBasedCache")


def test_the_read_budget_is_larger_than_the_submission_budget_by_default():
    assert (settings.PAGETRAIL_API_RATE, settings.PAGETRAIL_API_READ_RATE) == ("120/m", "600/m")
    assert (THROTTLE.submissions.num_requests, THROTTLE.reads.num_requests) == (120, 600)
