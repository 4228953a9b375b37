"""What every answer under /api/ shares: JSON for a method a route does not take, HEAD where GET is, a request id,
WWW-Authenticate saying why a token is refused, and ETag, Last-Modified and 304 on immutable bytes."""

import io
import logging
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import Manifest
from core.logs import ContextFilter
from extraction.accounts import ServiceAccount, ServiceAccountToken
from tests.audit.test_api import job  # noqa: F401 (a fixture)
from tests.extraction.test_api import auth, token  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("put", "/api/v1/bundles", "POST"),
        ("delete", "/api/v1/jobs/1", "GET, HEAD"),
        ("post", "/api/v1/jobs", "GET, HEAD"),
    ],
)
def test_a_method_a_route_does_not_take_is_a_json_405_naming_those_it_takes(client, token, method, path, allowed):  # noqa: F811
    response = getattr(client, method)(path, **auth(token))
    assert response.status_code == 405 and response["Allow"] == allowed
    assert response.json()["error"] == {"code": "method_not_allowed", "message": f"This route takes {allowed}."}


def test_head_answers_with_the_headers_get_would_send(client, token, job):  # noqa: F811
    manifest = Manifest.objects.get()
    for path in (f"/api/v1/jobs/{job['id']}/manifest", f"/api/v1/jobs/{job['id']}", job["assets"][0]["url"]):
        got, head = client.get(path, **auth(token)), client.head(path, **auth(token))
        assert (head.status_code, body(head)) == (200, b""), path
        assert head["Content-Type"] == got["Content-Type"] and head["Content-Length"] == got["Content-Length"], path
    head = client.head(f"/api/v1/manifests/{manifest.pk}", **auth(token))
    assert head["X-Manifest-SHA256"] == manifest.sha256 and int(head["Content-Length"]) == len(manifest.body)


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_head_of_something_missing_is_the_same_404(client, token):  # noqa: F811
    assert client.head("/api/v1/jobs/999", **auth(token)).status_code == 404


@pytest.mark.parametrize("path", ["/api/v1/jobs", "/api/v1/nope", "/api/v1/jobs/999"])
def test_a_request_id_is_echoed_on_every_answer(client, token, path):  # noqa: F811
    response = client.get(path, HTTP_X_REQUEST_ID="batch-7:item-3.try_1", **auth(token))
    assert response["X-Request-Id"] == "batch-7:item-3.try_1"


@pytest.fixture
def plain_lines(settings):
    """The settings' plain format and the context filter on a handler we can read."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(logging.Formatter(settings.LOGGING["formatters"]["plain"]["format"]))
    logging.getLogger().addHandler(handler)
    yield lambda: stream.getvalue().splitlines()
    logging.getLogger().removeHandler(handler)


def test_the_log_lines_of_a_request_name_its_id(client, token, plain_lines):  # noqa: F811
    client.get("/api/v1/jobs/999", HTTP_X_REQUEST_ID="find-me-7", **auth(token))
    client.get("/api/v1/jobs/998", **auth(token))
    logging.getLogger("pagetrail.test").warning("outside any request")
    lines = [line for line in plain_lines() if "Not Found: /api/v1/jobs/99" in line or "outside any" in line]
    assert "job=None] outside any request" in lines[2]
    assert len(lines) == 3 and "req=find-me-7]" in lines[0] and re.search(r"req=[0-9a-f]{32}\]", lines[1])


@pytest.mark.parametrize("sent", [None, "", "has space", "x" * 201, "ü"])
def test_a_missing_or_malformed_request_id_is_replaced_by_a_new_one(client, sent):
    response = client.get("/api/v1/jobs", **({"HTTP_X_REQUEST_ID": sent} if sent is not None else {}))
    assert response.status_code == 401 and re.fullmatch(r"[0-9a-f]{32}", response["X-Request-Id"])
    assert client.get("/api/v1/jobs")["X-Request-Id"] != response["X-Request-Id"]


def test_a_request_without_a_token_is_told_the_scheme(client):
    response = client.get("/api/v1/jobs")
    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="pagetrail"'


def refusal(client, token: str) -> str:
    response = client.get("/api/v1/jobs", **auth(token))
    assert response.status_code == 401 and response.json()["error"]["code"] == "unauthenticated"
    found = re.fullmatch(
        r'Bearer realm="pagetrail", error="invalid_token", error_description="(.+)"', response["WWW-Authenticate"]
    )
    assert found, response["WWW-Authenticate"]
    return found[1]


def test_a_refused_token_is_told_whether_it_is_unknown_expired_or_revoked(client, token):  # noqa: F811
    assert refusal(client, "pt_" + "x" * 40) == "The token is unknown"
    ServiceAccountToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert refusal(client, token) == "The token is expired"
    ServiceAccountToken.objects.update(revoked_at=timezone.now())
    assert refusal(client, token) == "The token is revoked"


def test_a_token_of_a_revoked_account_is_revoked(client, token):  # noqa: F811
    ServiceAccount.objects.get().revoke()
    assert refusal(client, token) == "The token is revoked"


def test_an_upload_with_a_refused_token_is_told_why_before_its_body_is_read(client, token):  # noqa: F811
    ServiceAccountToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client.post("/api/v1/bundles", data=b"%PDF-1.7", content_type="application/pdf", **auth(token))
    assert response.status_code == 401 and 'error_description="The token is expired"' in response["WWW-Authenticate"]


def test_manifests_and_assets_carry_their_sha256_as_etag_and_answer_304_while_it_matches(client, token, job):  # noqa: F811
    manifest = Manifest.objects.get()
    paths = {f"/api/v1/manifests/{manifest.pk}": manifest.sha256, job["assets"][0]["url"]: job["assets"][0]["sha256"]}
    for path, sha256 in paths.items():
        first = client.get(path, **auth(token))
        assert (first.status_code, first["ETag"]) == (200, f'"{sha256}"') and first["Last-Modified"].endswith(" GMT")
        again = client.get(path, HTTP_IF_NONE_MATCH=first["ETag"], **auth(token))
        assert (again.status_code, again.content, again["ETag"]) == (304, b"", first["ETag"]), path
        other = client.get(path, HTTP_IF_NONE_MATCH=f'"{"0" * 64}"', **auth(token))
        assert other.status_code == 200, path


def test_another_accounts_etag_guess_is_the_same_404(client, token, job):  # noqa: F811
    manifest, other = Manifest.objects.get(), auth(ServiceAccount.objects.create(name="contracts").issue_token())
    response = client.get(f"/api/v1/manifests/{manifest.pk}", HTTP_IF_NONE_MATCH=f'"{manifest.sha256}"', **other)
    assert response.status_code == 404


def test_the_openapi_document_declares_the_edges(client):
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    manifest = paths["/api/v1/manifests/{manifest_id}"]
    assert manifest["head"]["operationId"] == manifest["get"]["operationId"] + "_head"
    assert "content" not in manifest["head"]["responses"]["200"]
    assert {"ETag", "Last-Modified", "X-Request-Id"} <= set(manifest["get"]["responses"]["200"]["headers"])
    assert "304" in manifest["get"]["responses"] and "304" in paths["/api/v1/assets/{asset_id}"]["get"]["responses"]
    assert "WWW-Authenticate" in paths["/api/v1/jobs"]["get"]["responses"]["401"]["headers"]
    assert "Retry-After" in paths["/api/v1/jobs"]["get"]["responses"]["429"]["headers"]
    assert "X-Request-Id" in paths["/api/v1/bundles"]["post"]["responses"]["202"]["headers"]
