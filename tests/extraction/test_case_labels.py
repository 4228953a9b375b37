"""An account reads only the case label it gave: the bundle's own is its first sender's, which may name a claimant
and would say that the bytes were sent before."""

import pytest

from extraction.accounts import BundleAccess
from extraction.models import Bundle
from extraction.runner import run_job
from tests import pdfs
from tests.extraction.test_api import account_token, auth, submitted, token  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_senders(client, token, tmp_path):  # noqa: F811
    """The same bytes from two accounts, each under its own label."""
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    other = account_token("contracts")
    first = submitted(client, token, data, QUERY_STRING="case_label=claimant-jane-doe")
    second = submitted(client, other, data, QUERY_STRING="case_label=contract-9")
    return token, other, first, second


def test_the_second_sender_reads_its_own_label_never_the_first_senders(client, two_senders):
    _, other, first, second = two_senders
    assert first["job"]["case_label"] == "claimant-jane-doe" and Bundle.objects.get().case_label == "claimant-jane-doe"
    assert (second["job"]["case_label"], second["case_label_ignored"]) == ("contract-9", False)
    job_id = second["job"]["id"]
    assert client.get(f"/api/v1/jobs/{job_id}", **auth(other)).json()["case_label"] == "contract-9"
    listed = client.get("/api/v1/jobs", **auth(other)).json()["items"]
    assert [job["case_label"] for job in listed] == ["contract-9"]
    assert "claimant-jane-doe" not in str(client.get("/api/v1/jobs", **auth(other)).content)


def test_an_account_filters_by_its_own_label_only(client, two_senders):
    token, other, first, second = two_senders
    assert client.get("/api/v1/jobs?case_label=claimant-jane-doe", **auth(other)).json()["items"] == []
    mine = client.get("/api/v1/jobs?case_label=contract-9", **auth(other)).json()["items"]
    assert [job["id"] for job in mine] == [second["job"]["id"]]
    theirs = client.get("/api/v1/jobs?case_label=claimant-jane-doe", **auth(token)).json()["items"]
    assert [job["id"] for job in theirs] == [first["job"]["id"]]


def test_a_job_a_second_account_sees_later_shows_it_its_own_label(client, two_senders):
    """A round staff start on the bundle after both sent it is visible to both, each with its own label."""
    token, other, _, _ = two_senders
    from extraction.intake.rounds import request_reextraction

    again = request_reextraction(Bundle.objects.get())
    run_job(again.pk)
    assert client.get(f"/api/v1/jobs/{again.pk}", **auth(other)).json()["case_label"] == "contract-9"
    assert client.get(f"/api/v1/jobs/{again.pk}", **auth(token)).json()["case_label"] == "claimant-jane-doe"
    assert dict(BundleAccess.objects.values_list("account__name", "case_label")) == {
        "claims-ingest": "claimant-jane-doe",
        "contracts": "contract-9",
    }
