"""The upstream services' API over Django's test client: auth, intake, idempotency, errors, OpenAPI."""

import hashlib
import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase
from django.utils import timezone

from audit.models import Manifest
from extraction.accounts import BundleAccess, IdempotencyRecord, ServiceAccount, ServiceAccountToken
from extraction.models import Bundle, Job, Rejection, Submission
from extraction.pdf.sandbox import stop_idle_children
from extraction.runner import run_job
from tests import pdfs, pdfs_intake
from tests.conftest import fill, queued_tasks, run_intake_tasks, small_tmpfs, temp_files

pytestmark = pytest.mark.django_db


def account_token(name: str) -> str:
    return ServiceAccount.objects.create(name=name).issue_token()


@pytest.fixture
def token():
    from django.core.cache import cache

    cache.clear()  # rate-limit history of earlier tests
    account = ServiceAccount.objects.create(name="claims-ingest")
    secret = account.issue_token()
    return secret


def post_pdf(client, token, data: bytes, key=None, **extra):
    """As a client would: the request's transaction commits, so its submission is queued for the intake worker."""
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}", **({"HTTP_IDEMPOTENCY_KEY": key} if key else {})}
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post("/api/v1/bundles", data=data, content_type="application/pdf", **headers, **extra)


def submitted(client, token, data, key=None, **extra) -> dict:
    """Post, let the intake worker decide (here, in this process), and return the submission as its client reads it."""
    response = post_pdf(client, token, data, key, **extra)
    assert response.status_code == 202, response.content
    run_intake_tasks()
    return client.get(response.json()["status_url"], HTTP_AUTHORIZATION=f"Bearer {token}").json()


def test_it_answers_a_raw_pdf_body_with_202_and_a_pending_submission_before_any_job(client, token, tmp_path):
    response = post_pdf(client, token, pdfs.mixed(tmp_path).read_bytes())
    assert response.status_code == 202
    body = response.json()
    assert (body["state"], body["job"], body["status_url"]) == ("pending", None, f"/api/v1/submissions/{body['id']}")
    assert not Bundle.objects.exists() and not Job.objects.exists()
    assert (queued_tasks(), intake_queue_size()) == (0, 1)  # on the intake queue: never behind extraction


def intake_queue_size() -> int:
    from django.conf import settings
    from django_q.brokers import get_broker

    return get_broker(settings.PAGETRAIL_INTAKE_QUEUE).queue_size()


def test_the_intake_worker_accepts_the_submission_with_its_job(client, token, tmp_path):
    body = submitted(client, token, pdfs.mixed(tmp_path).read_bytes())
    job = Job.objects.get()
    assert (body["state"], body["created"], body["error"]) == ("accepted", True, None)
    assert body["job"]["id"] == job.pk and body["job"]["status_url"] == f"/api/v1/jobs/{job.pk}"
    assert Bundle.objects.get().submitted_by == "api:claims-ingest" and temp_files() == []


def test_it_accepts_a_multipart_file_with_a_case_label(client, token, tmp_path):
    upload = SimpleUploadedFile("claim.pdf", pdfs.jpeg_rgb(tmp_path).read_bytes(), content_type="application/pdf")
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(
            "/api/v1/bundles?case_label=claim-7", {"file": upload}, HTTP_AUTHORIZATION=f"Bearer {token}"
        )
    assert response.status_code == 202 and run_intake_tasks() == 1
    assert (Bundle.objects.get().case_label, Bundle.objects.get().original_filename) == ("claim-7", "claim.pdf")


def test_the_same_bytes_again_are_given_the_existing_job(client, token, tmp_path):
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    first, again = submitted(client, token, data), submitted(client, token, data)
    assert (first["created"], again["created"]) == (True, False) and first["id"] != again["id"]
    assert first["job"]["id"] == again["job"]["id"] == Job.objects.get().pk


def test_an_idempotency_key_replay_returns_the_same_submission_as_it_is_now(client, token, tmp_path):
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    first = post_pdf(client, token, data, key="req-1")
    early = post_pdf(client, token, data, key="req-1")
    assert (first.status_code, early.status_code) == (202, 202) and early.json() == first.json()
    run_intake_tasks()
    later = post_pdf(client, token, data, key="req-1").json()
    assert (later["id"], later["state"]) == (first.json()["id"], "accepted") and Submission.objects.count() == 1
    assert run_intake_tasks() == 0  # a replay queues nothing


def test_an_idempotency_key_with_another_payload_is_422(client, token, tmp_path):
    post_pdf(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes(), key="req-1")
    response = post_pdf(client, token, pdfs.cmyk(tmp_path).read_bytes(), key="req-1")
    assert response.status_code == 422 and response.json()["error"]["code"] == "idempotency_conflict"


def test_an_idempotency_key_still_being_handled_is_409(client, token, tmp_path):
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    IdempotencyRecord.objects.create(
        account=ServiceAccount.objects.get(), key="req-1", request_sha256=hashlib.sha256(data).hexdigest()
    )
    response = post_pdf(client, token, data, key="req-1")
    assert response.status_code == 409 and response.json()["error"]["code"] == "in_progress"
    assert response["Retry-After"] == "1"


@pytest.mark.parametrize(
    "data, code",
    [
        (b"PK\x03\x04" + b"\x00" * 64, "not_pdf"),
        (b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\n", "truncated"),
    ],
)
def test_a_refused_submission_has_a_code_a_rejection_and_creates_nothing(client, token, data, code):
    body = submitted(client, token, data)
    assert (body["state"], body["error"]["code"], body["job"]) == ("refused", code, None)
    assert body["error"]["message"] and Rejection.objects.get().code == code
    assert not Bundle.objects.exists() and temp_files() == []


def child_start_marker(tmp_path, monkeypatch):
    """Every PDF child started from now on leaves a file behind (the interpreter imports `sitecustomize` from
    the PYTHONPATH the child inherits): whether a child ran is a fact on disk, not a guess."""
    site, marker = tmp_path / "site", tmp_path / "a-pdf-child-started"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'a').close()\n")
    stop_idle_children()  # a warm child would not start again
    monkeypatch.setenv("PYTHONPATH", str(site))
    return marker


def test_the_web_request_starts_no_pdf_child_the_intake_worker_does(client, token, tmp_path, monkeypatch):
    marker = child_start_marker(tmp_path, monkeypatch)
    assert post_pdf(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes()).status_code == 202
    assert not marker.exists() and Submission.objects.get().state == "pending"
    run_intake_tasks()
    stop_idle_children()
    assert marker.exists() and Submission.objects.get().state == "accepted"


@pytest.fixture
def full_temp(tmp_path, settings):
    """A real full file system as the temp area: a 256 KiB tmpfs, filled (root only: it mounts one)."""
    with small_tmpfs(tmp_path / "full") as root:
        settings.TEMP_ROOT = root
        fill(root)
        yield root


def test_a_full_temp_area_is_a_json_507_and_leaves_nothing_half_written(client, token, tmp_path, full_temp):
    response = post_pdf(client, token, pdfs.mixed(tmp_path).read_bytes(), key="k-full")
    assert response.status_code == 507 and response.json()["error"]["code"] == "storage_unavailable"
    assert [p.name for p in full_temp.rglob("*") if p.is_file()] == ["filler"]
    assert not Submission.objects.exists() and not IdempotencyRecord.objects.exists()  # the key may try again


def test_a_temp_area_that_cannot_take_uploads_is_a_json_507(client, token, tmp_path, settings):
    settings.TEMP_ROOT = tmp_path / "broken"
    settings.TEMP_ROOT.mkdir()
    (settings.TEMP_ROOT / "uploads").write_bytes(b"")  # a file where the uploads directory belongs
    response = post_pdf(client, token, pdfs.mixed(tmp_path).read_bytes())
    assert response.status_code == 507 and response.json()["error"]["code"] == "storage_unavailable"
    assert response["Content-Type"].startswith("application/json") and not Submission.objects.exists()


def test_an_upload_over_the_limit_is_413(client, token, settings):
    settings.PAGETRAIL_MAX_UPLOAD_BYTES = 1024 * 1024
    response = post_pdf(client, token, b"%PDF-1.7\n" + b"0" * (2 * 1024 * 1024))
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"


def test_it_refuses_a_missing_or_revoked_token_with_401(client, token, tmp_path):
    assert client.get("/api/v1/jobs/1").status_code == 401
    ServiceAccount.objects.get().revoke()
    response = client.get("/api/v1/jobs/1", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 401 and response.json()["error"]["code"] == "unauthenticated"


def test_it_reports_a_job_and_serves_its_manifest_bytes_with_their_hash(client, token, tmp_path):
    job_id = submitted(client, token, pdfs.mixed(tmp_path).read_bytes())["job"]["id"]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert client.get(f"/api/v1/jobs/{job_id}", **auth).json()["manifest_url"] is None
    run_job(job_id)
    job = client.get(f"/api/v1/jobs/{job_id}", **auth).json()
    assert (job["state"], job["attempts"], job["retries"]) == ("completed", 2, 0)
    response = client.get(job["manifest_url"], **auth)
    manifest = Manifest.objects.get()
    assert response.content == manifest.body.encode() and response["X-Manifest-SHA256"] == manifest.sha256
    assert json.loads(response.content)["input"]["sha256"] == job["correlation_id"]


def test_an_unknown_job_is_a_json_404(client, token):
    response = client.get("/api/v1/jobs/999", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_a_service_account_is_rate_limited_with_429(client, token, monkeypatch):
    from django.core.cache import cache

    from portal.api import THROTTLE

    cache.clear()
    monkeypatch.setattr(THROTTLE.reads, "num_requests", 2)
    answers = [client.get("/api/v1/jobs/999", HTTP_AUTHORIZATION=f"Bearer {token}") for _ in range(3)]
    assert answers[-1].status_code == 429 and 1 <= int(answers[-1]["Retry-After"]) <= 60


def test_the_openapi_document_describes_every_route_and_error(client):
    document = client.get("/api/v1/openapi.json").json()
    assert {
        "/api/v1/bundles",
        "/api/v1/submissions/{submission_id}",
        "/api/v1/jobs/{job_id}",
        "/api/v1/manifests/{manifest_id}",
        "/api/v1/jobs/{job_id}/manifest",
        "/api/v1/assets/{asset_id}",
    } <= set(document["paths"])
    job = document["components"]["schemas"]["JobOut"]["properties"]
    assert {"manifest_id", "case_label", "assets"} <= set(job)
    submit = document["paths"]["/api/v1/bundles"]["post"]["responses"]
    assert {"202", "400", "401", "409", "413", "422", "429", "507"} <= set(submit)
    assert "Retry-After" in submit["409"]["headers"]
    proof = document["paths"]["/api/v1/manifests/{manifest_id}/inclusion-proof"]["get"]["responses"]
    assert "Retry-After" in proof["409"]["headers"]


def test_an_admin_creates_a_service_account_and_sees_its_token_once(admin_client):
    response = admin_client.post("/admin/extraction/serviceaccount/add/", {"name": "contracts"}, follow=True)
    text = response.content.decode()
    token = text.split("Token for contracts (shown once): ")[1].split(" ")[0].split("<")[0]
    account = ServiceAccount.objects.get()
    assert ServiceAccount.for_token(token) == account and token not in account.tokens.get().token_sha256
    assert token not in admin_client.get(f"/admin/extraction/serviceaccount/{account.pk}/change/").content.decode()


def test_it_accepts_a_pdf_whose_stream_length_is_an_indirect_object(client, token, tmp_path):
    body = submitted(client, token, pdfs_intake.indirect_length(tmp_path).read_bytes())

    assert body["state"] == "accepted" and body["job"]["id"] == Job.objects.get().pk


def test_a_child_that_cannot_start_is_tried_once_more_then_the_submission_is_refused(
    client, token, tmp_path, monkeypatch
):
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    with monkeypatch.context() as patch:
        pdfs_intake.child_cannot_start(patch)
        response = post_pdf(client, token, data, key="k-1")
        assert run_intake_tasks() == 2  # the first try queued the second
    stop_idle_children()

    body = client.get(response.json()["status_url"], **auth(token)).json()
    assert (body["state"], body["error"]["code"], body["retryable"]) == ("refused", "validator_crashed", True)
    assert Rejection.objects.get().code == "validator_crashed" and not Bundle.objects.exists()
    assert temp_files() == [] and Submission.objects.get().tries == 2


# ---------- JSON everywhere, keys that survive crashes, the caller's job list ----------


def test_an_unknown_api_route_is_a_json_404(client, token):
    for path in ("/api/v1/nope", "/api/v2/jobs", "/api/"):
        response = client.get(path, HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found", path


def test_a_malformed_multipart_body_is_a_json_400(client, token):
    response = client.post(
        "/api/v1/bundles",
        data=b'--x\r\nContent-Disposition: form-data; name="file"; filename=',
        content_type="multipart/form-data; boundary=x",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_request"


def test_an_empty_body_is_refused_like_every_intake_refusal_with_422(client, token):
    response = post_pdf(client, token, b"")
    assert response.status_code == 422 and response.json()["error"]["code"] == "empty"


def test_an_idempotency_key_longer_than_the_maximum_is_400_never_cut(client, token, tmp_path):
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    response = post_pdf(client, token, data, key="k" * (IdempotencyRecord.KEY_MAX + 1))
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_idempotency_key"
    assert not IdempotencyRecord.objects.exists() and not Bundle.objects.exists()


def test_a_key_whose_request_died_is_taken_over_when_its_lease_ends(client, token, tmp_path, settings):
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    stale = timezone.now() - timedelta(seconds=settings.PAGETRAIL_IDEMPOTENCY_LEASE_SECONDS + 1)
    IdempotencyRecord.objects.create(
        account=ServiceAccount.objects.get(),
        key="order-4711",
        request_sha256=hashlib.sha256(data).hexdigest(),
        created_at=stale,
    )
    response = post_pdf(client, token, data, key="order-4711")
    assert response.status_code == 202 and IdempotencyRecord.objects.get().response_status == 202
    assert post_pdf(client, token, data, key="order-4711").json() == response.json()  # and replays from then on


def test_it_lists_only_the_callers_jobs_with_filters_and_pages(client, token, tmp_path):
    mine = [
        submitted(client, token, factory(tmp_path).read_bytes())["job"]["id"]
        for factory in (pdfs.jpeg_rgb, pdfs.cmyk, pdfs.mixed)
    ]
    other = ServiceAccount.objects.create(name="contracts")
    other_token = other.issue_token()
    submitted(client, other_token, pdfs.reused_on_three_pages(tmp_path).read_bytes())
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    first = client.get("/api/v1/jobs?limit=2", **auth).json()
    assert first["count"] == 3 and [j["id"] for j in first["items"]] == mine[::-1][:2]
    second = client.get(first["next"], **auth).json()
    assert [j["id"] for j in second["items"]] == mine[:1] and second["next"] is None
    assert client.get("/api/v1/jobs?state=completed", **auth).json()["count"] == 0
    assert client.get("/api/v1/jobs?limit=0", **auth).status_code == 400


def test_a_misspelt_filter_is_a_400_naming_it(client, token):
    response = client.get("/api/v1/jobs?status=failed", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 400 and "status" in response.json()["error"]["message"]


def test_a_page_past_what_the_database_counts_is_a_400_not_a_500(client, token):
    response = client.get(f"/api/v1/jobs?offset={2**79}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 400 and "offset" in response.json()["error"]["message"]


def test_a_case_label_longer_than_its_column_is_a_400_before_anything_is_kept(client, token, tmp_path):
    response = post_pdf(client, token, pdfs.mixed(tmp_path).read_bytes(), QUERY_STRING="case_label=" + "c" * 201)
    assert response.status_code == 400 and "case_label" in response.json()["error"]["message"]
    assert not Submission.objects.exists()


# ---------- each account sees only its own submissions ----------


def auth(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_another_accounts_submission_is_a_404(client, token, tmp_path):
    status_url = post_pdf(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes()).json()["status_url"]
    response = client.get(status_url, **auth(account_token("contracts")))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert client.get(status_url, **auth(token)).status_code == 200


def test_another_accounts_job_is_a_404(client, token, tmp_path):
    job_id = submitted(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes())["job"]["id"]
    response = client.get(f"/api/v1/jobs/{job_id}", **auth(account_token("contracts")))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_another_accounts_manifest_is_a_404_by_job_and_by_id(client, token, tmp_path):
    run_job(submitted(client, token, pdfs.mixed(tmp_path).read_bytes())["job"]["id"])
    manifest, other = Manifest.objects.get(), auth(account_token("contracts"))
    assert client.get(f"/api/v1/jobs/{manifest.job_id}/manifest", **other).status_code == 404
    assert client.get(f"/api/v1/manifests/{manifest.pk}", **other).status_code == 404
    assert client.get(f"/api/v1/manifests/{manifest.pk}", **auth(token)).status_code == 200


def test_the_same_bytes_from_another_account_are_its_own_new_submission(client, token, tmp_path):
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    submitted(client, token, data)
    other = account_token("contracts")
    first, again = submitted(client, other, data), submitted(client, other, data)
    assert (first["state"], first["created"]) == ("accepted", True)
    assert (again["state"], again["created"]) == ("accepted", False)
    assert Bundle.objects.count() == 1 and BundleAccess.objects.count() == 2


def test_the_same_bytes_from_another_account_get_a_job_of_its_own(client, token, tmp_path):
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    first = submitted(client, token, data)["job"]["id"]
    other = account_token("contracts")
    own = submitted(client, other, data)["job"]["id"]
    assert own != first and Job.objects.get(pk=own).bundle_id == Job.objects.get(pk=first).bundle_id
    assert [job["id"] for job in client.get("/api/v1/jobs", **auth(other)).json()["items"]] == [own]
    assert [job["id"] for job in client.get("/api/v1/jobs", **auth(token)).json()["items"]] == [first]
    assert client.get(f"/api/v1/jobs/{first}", **auth(other)).status_code == 404
    assert client.get(f"/api/v1/jobs/{own}", **auth(token)).status_code == 404


def test_nothing_another_account_reads_shows_that_the_bytes_were_sent_before(client, token, tmp_path):
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    run_job(submitted(client, token, data)["job"]["id"])
    other = account_token("contracts")
    own = client.get(submitted(client, other, data)["job"]["status_url"], **auth(other)).json()
    assert (own["state"], own["attempts"]) == ("queued", 0)  # as for bytes nobody had sent
    assert client.get(f"/api/v1/jobs/{own['id']}/manifest", **auth(other)).status_code == 404
    run_job(own["id"])
    assert client.get(f"/api/v1/jobs/{own['id']}/manifest", **auth(other)).status_code == 200


def test_an_account_sees_a_reextraction_staff_start_after_its_submission(client, token, tmp_path):
    from extraction.intake.rounds import request_reextraction

    first = submitted(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes())["job"]["id"]
    again = request_reextraction(Job.objects.get(pk=first).bundle)
    assert [job["id"] for job in client.get("/api/v1/jobs", **auth(token)).json()["items"]] == [again.pk, first]


def test_the_job_list_holds_only_the_callers_submissions(client, token, tmp_path):
    submitted(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes())
    other = account_token("contracts")
    own = submitted(client, other, pdfs.cmyk(tmp_path).read_bytes())["job"]["id"]
    assert [job["id"] for job in client.get("/api/v1/jobs", **auth(other)).json()["items"]] == [own]


def test_an_upload_from_the_admin_is_no_service_accounts_submission(client, token, tmp_path):
    from extraction.intake.staging import submit_bundle

    with open(pdfs.jpeg_rgb(tmp_path), "rb") as fh:
        job_id = submit_bundle(fh, filename="x.pdf", submitted_by="admin").job_id
    assert client.get(f"/api/v1/jobs/{job_id}", **auth(token)).status_code == 404


# ---------- tokens expire and are rotated with an overlap ----------


def test_a_token_is_refused_once_it_expires(settings):
    settings.PAGETRAIL_TOKEN_DAYS = 90
    account = ServiceAccount.objects.create(name="contracts")
    issued = timezone.now()
    secret = account.issue_token(at=issued)
    assert ServiceAccount.for_token(secret, at=issued + timedelta(days=89)) == account
    assert ServiceAccount.for_token(secret, at=issued + timedelta(days=90)) is None


def test_an_expired_token_is_a_401(client):
    secret = account_token("contracts")
    ServiceAccountToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client.get("/api/v1/jobs", **auth(secret))
    assert response.status_code == 401 and response.json()["error"]["code"] == "unauthenticated"


def test_both_tokens_are_valid_during_the_overlap_of_a_rotation(settings):
    settings.PAGETRAIL_TOKEN_OVERLAP_DAYS = 7
    account, issued = ServiceAccount.objects.create(name="contracts"), timezone.now()
    old = account.issue_token(at=issued)
    new = account.issue_token(at=issued + timedelta(days=30))
    during = issued + timedelta(days=36)
    assert ServiceAccount.for_token(old, at=during) == account == ServiceAccount.for_token(new, at=during)


def test_the_older_token_expires_when_the_overlap_ends(settings):
    settings.PAGETRAIL_TOKEN_OVERLAP_DAYS = 7
    account, issued = ServiceAccount.objects.create(name="contracts"), timezone.now()
    old = account.issue_token(at=issued)
    new = account.issue_token(at=issued + timedelta(days=30))
    after = issued + timedelta(days=37)
    assert ServiceAccount.for_token(old, at=after) is None and ServiceAccount.for_token(new, at=after) == account


def test_a_revoked_token_is_refused_while_the_accounts_other_token_works(client):
    account = ServiceAccount.objects.create(name="contracts")
    old, new = account.issue_token(), account.issue_token()
    account.tokens.get(prefix=old[:10]).revoke()
    assert client.get("/api/v1/jobs", **auth(old)).status_code == 401
    assert client.get("/api/v1/jobs", **auth(new)).status_code == 200


def test_an_admin_issues_a_new_token_shown_once_while_the_old_one_stays_valid(admin_client):
    account = ServiceAccount.objects.create(name="contracts")
    old = account.issue_token()
    response = admin_client.post(
        "/admin/extraction/serviceaccount/",
        {"action": "issue_new_token", "_selected_action": [account.pk]},
        follow=True,
    )
    new = response.content.decode().split("Token for contracts (shown once): ")[1].split(" ")[0].split("<")[0]
    assert new != old and ServiceAccount.for_token(new) == account == ServiceAccount.for_token(old)
    assert account.tokens.count() == 2
