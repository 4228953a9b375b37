"""Bounded bodies over Django's test client: what each route answers for a body over its limit, and what /api/
answers for what Django refuses before an API view runs. The real servers: tests/test_web_server.py."""

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from extraction.accounts import ServiceAccount
from extraction.models import Bundle, Rejection, Submission
from tests import pdfs

pytestmark = pytest.mark.django_db
MIB = 1024 * 1024


@pytest.fixture
def token():
    from django.core.cache import cache

    cache.clear()  # rate-limit history of earlier tests
    return ServiceAccount.objects.create(name="claims-ingest").issue_token()


def bearer(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_a_body_over_the_form_limit_on_the_admin_login_is_413_in_the_admins_style(client, settings):
    response = client.post(
        "/admin/login/", data=b"x" * (settings.PAGETRAIL_MAX_FORM_BYTES + 1), content_type="application/octet-stream"
    )
    assert response.status_code == 413
    assert "Refused (too_large)" in response.content.decode() and 'id="site-name"' in response.content.decode()


def test_a_body_over_the_form_limit_on_an_api_route_without_a_file_is_413_json(client, token, settings):
    response = client.post(
        "/api/v1/jobs",
        data=b"x" * (settings.PAGETRAIL_MAX_FORM_BYTES + 1),
        content_type="application/json",
        **bearer(token),
    )
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"


def test_an_api_upload_declared_over_the_limit_is_413_and_a_rejection_of_its_account(client, token, settings):
    settings.PAGETRAIL_MAX_UPLOAD_BYTES = MIB
    body = b"%PDF-1.7\n" + b"0" * (3 * MIB)
    response = client.post("/api/v1/bundles", data=body, content_type="application/pdf", **bearer(token))
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"
    rejection = Rejection.objects.get()
    assert (rejection.code, rejection.size, rejection.submitted_by) == ("too_large", len(body), "api:claims-ingest")


def test_an_api_upload_over_the_limit_without_a_valid_token_is_413_and_records_nothing(client, settings):
    settings.PAGETRAIL_MAX_UPLOAD_BYTES = MIB
    response = client.post(
        "/api/v1/bundles",
        data=b"0" * 2 * MIB,
        content_type="application/pdf",
        HTTP_AUTHORIZATION="Bearer pt_not-a-token",
    )
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"
    assert not Rejection.objects.exists()


def test_an_upload_larger_than_the_form_limit_reaches_intake(client, token, settings, tmp_path):
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    settings.PAGETRAIL_MAX_FORM_BYTES = len(data) // 2
    response = client.post("/api/v1/bundles", data=data, content_type="application/pdf", **bearer(token))
    assert response.status_code == 202 and Submission.objects.get().size == len(data)  # all of it, for intake


@pytest.mark.parametrize("path", ["/api/v1/bundles", "/admin/login/"])
def test_a_chunked_body_is_411(client, path):
    response = client.post(
        path, data=b"5\r\nhello\r\n0\r\n\r\n", content_type="application/pdf", HTTP_TRANSFER_ENCODING="chunked"
    )
    assert response.status_code == 411
    if path.startswith("/api/"):
        assert response.json()["error"]["code"] == "length_required"


def test_an_admin_upload_declared_over_the_limit_is_413_and_a_rejection_of_its_uploader(admin_client, settings):
    settings.PAGETRAIL_MAX_UPLOAD_BYTES = MIB
    big = SimpleUploadedFile("big.pdf", b"%PDF-1.7\n" + b"0" * (3 * MIB), content_type="application/pdf")
    response = admin_client.post(reverse("admin:extraction_bundle_add"), {"file": big})
    assert response.status_code == 413 and "Refused (too_large)" in response.content.decode()
    rejection = Rejection.objects.get()
    assert (rejection.code, rejection.submitted_by) == ("too_large", "admin") and rejection.size > 3 * MIB
    assert not Bundle.objects.exists()


def test_a_bad_host_under_the_api_is_json(client):
    response = client.get("/api/v1/jobs", HTTP_HOST="evil.example")
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_host"


def test_a_bad_host_elsewhere_stays_djangos_page(client):
    assert client.get("/admin/login/", HTTP_HOST="evil.example").status_code == 400


@pytest.mark.parametrize(
    "data, status, code",
    [
        ({f"field{i}": "x" for i in range(1100)}, 400, "too_many_fields"),
        ({f"file{i}": SimpleUploadedFile(f"{i}.pdf", b"%PDF") for i in range(120)}, 400, "too_many_files"),
        ({"case_label": "x" * (MIB + 1)}, 413, "too_large"),
    ],
)
def test_what_django_refuses_in_a_multipart_body_is_json_with_a_code(client, token, data, status, code):
    response = client.post("/api/v1/bundles", data, **bearer(token))
    assert response.status_code == status and response.json()["error"]["code"] == code
    assert "Traceback" not in response.content.decode()


def failing_middleware(get_response):
    def middleware(request):
        raise RuntimeError("a failure before any view")

    return middleware


def test_a_failure_before_an_api_view_is_json_under_the_api(settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.test_bodies.failing_middleware"]
    response = Client(raise_request_exception=False).get("/api/v1/jobs")
    assert response.status_code == 500 and response.json()["error"]["code"] == "internal_error"


CSRF = "a" * 32


def csrf_client(user=None) -> Client:
    """A browser's view of CSRF: Django's checks enforced (the test client skips them otherwise)."""
    browser = Client(enforce_csrf_checks=True)
    browser.cookies["csrftoken"] = CSRF
    if user:
        browser.force_login(user)
    return browser


def uploader() -> User:
    user = User.objects.create_user("uploader", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="submit_bundle"))
    return user


def admin_upload(browser: Client, data: bytes = b"%PDF-1.7\n" + b"0" * 3 * MIB, fields=None, **headers):
    upload = SimpleUploadedFile("one.pdf", data, content_type="application/pdf")
    return browser.post(reverse("admin:extraction_bundle_add"), {"file": upload, **(fields or {})}, **headers)


def test_an_anonymous_admin_upload_is_sent_to_the_login_with_its_body_unread():
    """Unread: Django sets `_read_started` on the first read of the body (real servers: tests/test_upload_gate.py)."""
    response = admin_upload(csrf_client(), HTTP_X_CSRFTOKEN=CSRF)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/?next=")
    assert not response.wsgi_request._read_started


def test_a_signed_in_user_who_may_not_upload_is_403_with_the_body_unread():
    response = admin_upload(csrf_client(User.objects.create_user("reader", is_staff=True)), HTTP_X_CSRFTOKEN=CSRF)
    assert response.status_code == 403 and not response.wsgi_request._read_started


def test_an_uploaders_wrong_csrf_header_is_403_with_the_body_unread():
    response = admin_upload(csrf_client(uploader()), HTTP_X_CSRFTOKEN="b" * 32)
    assert response.status_code == 403 and "CSRF" in response.content.decode()
    assert not response.wsgi_request._read_started


@pytest.mark.parametrize(
    "fields, headers", [({}, {"HTTP_X_CSRFTOKEN": CSRF}), ({"csrfmiddlewaretoken": CSRF}, {})], ids=["header", "form"]
)
def test_an_uploader_uploads_with_the_csrf_header_or_the_forms_token(fields, headers, tmp_path):
    response = admin_upload(csrf_client(uploader()), pdfs.jpeg_rgb(tmp_path).read_bytes(), fields, **headers)
    assert response.status_code == 302 and "/submission" in response["Location"]
    assert Submission.objects.get().submitted_by == "uploader"
