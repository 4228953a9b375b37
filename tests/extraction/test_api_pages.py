"""GET /api/v1/jobs in cursor pages: newest first, stable while jobs arrive, `offset` deprecated with its dates."""

import base64

import pytest

from extraction.intake.rounds import request_reextraction
from extraction.models import Job
from tests import pdfs
from tests.extraction.test_api import auth, submitted, token  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(client, token, tmp_path):  # noqa: F811
    """Three jobs of this account, oldest first: a submission, then two rounds staff started on its bundle."""
    first = submitted(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes())["job"]["id"]
    bundle = Job.objects.get(pk=first).bundle
    return [first, request_reextraction(bundle).pk, request_reextraction(bundle).pk]


def ids(answer: dict) -> list[int]:
    return [job["id"] for job in answer["items"]]


def test_jobs_arriving_between_two_pages_are_neither_repeated_nor_skipped(client, token, jobs):  # noqa: F811
    first = client.get("/api/v1/jobs?limit=2", **auth(token)).json()
    bundle = Job.objects.get(pk=jobs[0]).bundle
    newer = [request_reextraction(bundle).pk for _ in range(2)]
    second = client.get(first["next"], **auth(token)).json()
    assert (ids(first), ids(second), second["next"]) == (jobs[:0:-1], jobs[:1], None)
    assert ids(client.get("/api/v1/jobs?limit=10", **auth(token)).json()) == newer[::-1] + jobs[::-1]


def test_next_keeps_the_filters_and_the_limit(client, token, jobs):  # noqa: F811
    first = client.get("/api/v1/jobs?limit=1&state=queued", **auth(token)).json()
    assert "state=queued" in first["next"] and "limit=1" in first["next"] and "cursor=" in first["next"]
    assert ids(client.get(first["next"], **auth(token)).json()) == [jobs[1]]


@pytest.mark.parametrize(
    "cursor",
    ["not-base64!", base64.urlsafe_b64encode(b"id:-1").decode(), base64.urlsafe_b64encode(b"id:01").decode(), "aWQ6"],
)
def test_a_malformed_cursor_is_a_400_naming_it(client, token, cursor):  # noqa: F811
    response = client.get(f"/api/v1/jobs?cursor={cursor}", **auth(token))
    assert response.status_code == 400
    assert response.json()["error"] | {"message": ""} == {"code": "bad_cursor", "message": "", "parameter": "cursor"}


def test_offset_still_pages_for_now_and_says_when_it_goes(client, token, jobs):  # noqa: F811
    response = client.get("/api/v1/jobs?limit=1&offset=1", **auth(token))
    assert ids(response.json()) == [jobs[1]] and "offset" not in response.json()["next"]
    assert response["Deprecation"] == "@1796342400" and response["Sunset"] == "Fri, 04 Jun 2027 00:00:00 GMT"
    assert ids(client.get(response.json()["next"], **auth(token)).json()) == [jobs[0]]
    assert "Deprecation" not in client.get("/api/v1/jobs", **auth(token))


def test_cursor_and_offset_together_are_refused(client, token, jobs):  # noqa: F811
    after = client.get("/api/v1/jobs?limit=1", **auth(token)).json()["next"]
    response = client.get(f"{after}&offset=1", **auth(token))
    assert response.status_code == 400 and response.json()["error"]["parameter"] == "offset"
