"""Uploads from callers who may not upload are refused before their body is read, on real servers (runserver as
`make run` starts it, gunicorn as `make serve` does). Each request declares a 100 MiB body and sends 4 KiB of it:
a server that waits for the rest never answers (runserver) or is cut off by its worker timeout (gunicorn).
An upload into a full temp area (a real tmpfs, filled) is a 507 and leaves nothing behind."""

import json

import pytest

from tests.conftest import fill, small_tmpfs
from tests.webserver import CSRF_COOKIE, WebServer, head, request, stream

pytestmark = pytest.mark.slow

MIB = 1024 * 1024
DECLARED, SENT = 100 * MIB, 4 * 1024
ADMIN_UPLOAD = "/admin/extraction/bundle/add/"
CSRF_HEADER = "X-CSRFToken: " + "a" * 32 + "\r\n"


@pytest.fixture(scope="module", params=["runserver", "gunicorn"])
def server(request, tmp_path_factory):
    web = WebServer(request.param, tmp_path_factory.mktemp(request.param), "--timeout", "5")
    yield web
    web.stop()


def upload(server, path: str, *headers: str):
    """A multipart upload declaring DECLARED bytes of which only SENT arrive; the server must answer on that."""
    return stream(server.port, head(path, DECLARED, *headers, multipart=True), SENT, timeout=20)


def temp_files(server) -> list[str]:
    return sorted(p.name for p in (server.portal.data_dir / "temp").rglob("*") if p.is_file())


def test_an_anonymous_admin_upload_with_a_csrf_cookie_and_header_is_sent_to_the_login_unread(server):
    outcome = upload(server, ADMIN_UPLOAD, CSRF_COOKIE, CSRF_HEADER)
    assert (outcome.status, outcome.closed) == (302, True), outcome.response[:300]
    assert b"Location: /admin/login/?next=/admin/extraction/bundle/add/" in outcome.response
    assert temp_files(server) == []


def test_an_anonymous_admin_upload_with_the_csrf_cookie_alone_is_sent_to_the_login_unread(server):
    outcome = upload(server, ADMIN_UPLOAD, CSRF_COOKIE)
    assert outcome.status == 302, outcome.response[:300]
    assert temp_files(server) == []


def test_an_api_upload_without_a_token_is_401_unread(server):
    outcome = upload(server, "/api/v1/bundles", "Authorization: Bearer pt_not-a-token\r\n")
    assert outcome.status == 401 and b'"unauthenticated"' in outcome.response, outcome.response[:300]
    assert temp_files(server) == []


def test_a_signed_in_user_who_may_not_upload_is_403_unread(server):
    outcome = upload(server, ADMIN_UPLOAD, server.signed_in("reader", may_upload=False), CSRF_HEADER)
    assert outcome.status == 403, outcome.response[:300]
    assert temp_files(server) == []


def test_an_uploader_with_a_wrong_csrf_header_is_403_unread(server):
    wrong = "X-CSRFToken: " + "b" * 32 + "\r\n"
    outcome = upload(server, ADMIN_UPLOAD, server.signed_in("uploader", may_upload=True), wrong)
    assert outcome.status == 403 and b"CSRF" in outcome.response, outcome.response[:300]
    assert temp_files(server) == []


def test_static_files_carry_the_security_headers(server):
    """runserver --insecure serves /static/ itself (gunicorn leaves it to the proxy: a 404 from the portal)."""
    outcome = request(server.port, b"GET /static/portal/favicon.svg HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    headers = outcome.response.split(b"\r\n\r\n", 1)[0].lower()
    assert outcome.status == (200 if server.log_path.stem == "runserver" else 404)
    for name in (b"x-content-type-options: nosniff", b"x-frame-options: deny", b"content-security-policy:"):
        assert name in headers, headers.decode()


@pytest.fixture(scope="module", params=["runserver", "gunicorn"])
def full_server(request, tmp_path_factory):
    """A server whose temp area (a 4 MiB tmpfs, root only) is full."""
    data_dir = tmp_path_factory.mktemp(f"full-{request.param}")
    with small_tmpfs(data_dir / "temp", "4m") as temp:
        web = WebServer(request.param, data_dir, "--timeout", "5")
        try:
            fill(temp)
            yield web
        finally:
            web.stop()


def test_an_admin_upload_into_a_full_temp_area_is_a_507_page_and_leaves_nothing(full_server):
    cookie = full_server.signed_in("uploader", may_upload=True)
    outcome = stream(full_server.port, head(ADMIN_UPLOAD, 3 * MIB, cookie, CSRF_HEADER, multipart=True), 3 * MIB)
    assert outcome.status == 507 and b"Refused (storage_unavailable)" in outcome.response, outcome.response[:300]
    assert temp_files(full_server) == ["filler"]


def test_an_api_upload_into_a_full_temp_area_is_a_json_507_and_leaves_nothing(full_server):
    request_head = head("/api/v1/bundles", 3 * MIB, full_server.bearer(), multipart=True)
    outcome = stream(full_server.port, request_head, 3 * MIB)
    assert outcome.status == 507, outcome.response[:300]
    answer = json.JSONDecoder().raw_decode(outcome.response.split(b"\r\n\r\n", 1)[1].decode())[0]
    assert answer["error"]["code"] == "storage_unavailable"
    assert temp_files(full_server) == ["filler"]
