"""Ids that lead somewhere: a job's answer names its manifest, case label and assets, and each of them is served to
the accounts that may read the job, and answered to any other exactly as a missing one."""

import hashlib

import pytest

from audit.models import Asset, Manifest
from audit.verifier import keys
from core import stores
from extraction.runner import run_job
from tests import pdfs
from tests.conftest import delete_stored
from tests.extraction.test_api import account_token, auth, submitted, token  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(client, token, tmp_path):  # noqa: F811
    """A completed job of the mixed bundle (four images), submitted with a case label."""
    job_id = submitted(client, token, pdfs.mixed(tmp_path).read_bytes(), QUERY_STRING="case_label=claim-1042")["job"][
        "id"
    ]
    run_job(job_id)
    return client.get(f"/api/v1/jobs/{job_id}", **auth(token)).json()


def test_a_completed_job_names_its_manifest_id_its_case_label_and_its_assets(job):
    manifest = Manifest.objects.get()
    assert (job["manifest_id"], job["case_label"]) == (manifest.pk, "claim-1042")
    named = [(a["id"], a["name"], a["sha256"], a["size"]) for a in job["assets"]]
    assert named == [(a.pk, a.name, a.sha256, a.size) for a in manifest.assets.all()] and len(named) == 6


def test_the_job_list_names_the_same_evidence(client, token, job):  # noqa: F811
    assert client.get("/api/v1/jobs", **auth(token)).json()["items"] == [job]


def test_a_job_not_completed_yet_names_no_evidence(client, token, tmp_path):  # noqa: F811
    queued = submitted(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes())["job"]
    assert (queued["manifest_id"], queued["assets"], queued["case_label"]) == (None, [], "")


def test_the_manifest_id_leads_to_the_jobs_own_manifest(client, token, job):  # noqa: F811
    by_id = client.get(f"/api/v1/manifests/{job['manifest_id']}", **auth(token))
    by_job = client.get(f"/api/v1/jobs/{job['id']}/manifest", **auth(token))
    assert by_id.status_code == by_job.status_code == 200 and by_id.content == by_job.content
    assert by_id["X-Manifest-SHA256"] == Manifest.objects.get(job_id=job["id"]).sha256


def test_the_manifest_is_served_with_both_its_signatures_which_verify_with_the_published_keys(client, token, job):  # noqa: F811
    answer = client.get(f"/api/v1/manifests/{job['manifest_id']}", **auth(token))
    published = keys.read_key_list(client.get("/signing-keys.json").json())
    trusted = keys.Trust(published[0], published[1])
    assert answer["X-Manifest-ML-DSA-Key-Id"].startswith(keys.MLDSA44)
    for signature, key_id in (
        ("X-Manifest-Signature", "X-Manifest-Key-Id"),
        ("X-Manifest-ML-DSA-Signature", "X-Manifest-ML-DSA-Key-Id"),
    ):
        assert trusted.problem(answer.content, answer[signature], answer[key_id]) is None


def test_it_serves_each_assets_bytes_with_their_sha256(client, token, job):  # noqa: F811
    for asset in job["assets"]:
        response = client.get(asset["url"], **auth(token))
        data = b"".join(response.streaming_content)
        assert response.status_code == 200 and response["X-Asset-SHA256"] == asset["sha256"]
        assert hashlib.sha256(data).hexdigest() == asset["sha256"] and len(data) == asset["size"]
        assert response["Content-Type"] == asset["content_type"] and response["X-Content-Type-Options"] == "nosniff"


def test_another_account_gets_the_same_404_for_each_as_for_nothing(client, token, job):  # noqa: F811
    other = auth(account_token("contracts"))
    paths = [
        f"/api/v1/jobs/{job['id']}",
        f"/api/v1/jobs/{job['id']}/manifest",
        f"/api/v1/manifests/{job['manifest_id']}",
        f"/api/v1/manifests/{job['manifest_id']}/inclusion-proof",
        *(asset["url"] for asset in job["assets"]),
    ]
    missing = client.get("/api/v1/assets/999999", **other)
    assert missing.status_code == 404
    for path in paths:
        response = client.get(path, **other)
        assert (response.status_code, response.json()) == (404, missing.json()), path
        assert client.get(path, **auth(token)).status_code != 404, path


def test_an_asset_retention_deleted_is_410_removed(client, token, job):  # noqa: F811
    asset = Asset.objects.get(pk=job["assets"][0]["id"])
    delete_stored("outputs", asset.name)
    assert not stores.outputs().exists(asset.name)
    response = client.get(job["assets"][0]["url"], **auth(token))
    assert response.status_code == 410 and response.json()["error"]["code"] == "removed"


def test_the_job_list_filters_by_case_label(client, token, job, tmp_path):  # noqa: F811
    submitted(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes(), QUERY_STRING="case_label=claim-7")
    found = client.get("/api/v1/jobs?case_label=claim-1042", **auth(token)).json()
    assert (found["count"], [j["id"] for j in found["items"]]) == (1, [job["id"]])
    assert client.get("/api/v1/jobs?case_label=claim-10", **auth(token)).json()["count"] == 0  # exact, not a prefix
