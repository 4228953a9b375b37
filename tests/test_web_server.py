"""Attacks on real web servers over loopback: runserver as `make run` starts it, gunicorn with the checked-in
config as `make serve` does. Bodies of 2 GiB are generated on the fly; every wait is bounded."""

import json

import pytest

from tests.webserver import CSRF_COOKIE, PeakGrowth, WebServer, head, request, slow_headers, stream

pytestmark = pytest.mark.slow

GIB2 = 2 * 1024**3
MIB = 1024 * 1024
# How much of a 2 GiB body may reach the server (socket buffers included), and how much it may grow by.
TAKEN_AT_MOST = 64 * MIB
GROWTH_AT_MOST = 48 * MIB


@pytest.fixture(scope="module", params=["runserver", "gunicorn"])
def server(request, tmp_path_factory):
    web = WebServer(request.param, tmp_path_factory.mktemp(request.param), "--timeout", "5")
    for _ in range(4):  # every worker has imported and rendered what a refusal needs before memory is measured
        for path in ("/admin/login/", "/api/v1/bundles"):
            stream(web.port, head(path, 4 * MIB, CSRF_COOKIE, web.bearer(), "Connection: close\r\n"), 4 * MIB)
    yield web
    web.stop()


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory):
    web = WebServer("gunicorn", tmp_path_factory.mktemp("gunicorn-limits"), "--timeout", "3")
    yield web
    web.stop()


ATTACKS = {  # name: (path, declared length or None for chunked, expected status, multipart, authenticated)
    "admin login, multipart, no login": ("/admin/login/", GIB2, 413, True, False),
    "API upload, multipart, authenticated": ("/api/v1/bundles", GIB2, 413, True, True),
    "API upload, raw, authenticated": ("/api/v1/bundles", GIB2, 413, False, True),
    "API upload, raw, no token": ("/api/v1/bundles", GIB2, 413, False, False),
    "API upload, chunked, authenticated": ("/api/v1/bundles", None, 411, False, True),
    "API jobs, raw, authenticated": ("/api/v1/jobs", GIB2, 413, False, True),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_2_gib_body_is_refused_unread_and_leaves_memory_flat(server, attack, capsys):
    path, length, status, multipart, authenticated = ATTACKS[attack]
    extra = [CSRF_COOKIE, server.bearer() if authenticated else ""]
    with PeakGrowth(server) as memory:
        for grace in (0.0, 2.0):
            request = head(path, length, *extra, multipart=multipart)
            outcome = stream(server.port, request, GIB2, chunked=length is None, answer_grace=grace)
            # A server that answers and closes with the body unread makes the kernel reset the connection; the
            # reset can overtake the answer in the client's buffer. Once more, reading an answer to the head
            # before the body starts: the refusal must still come unread and leave memory flat.
            if outcome.response or not outcome.closed:
                break
    with capsys.disabled():
        print(
            f"\n{server.log_path.stem:9} {attack:40} {outcome.status} took {outcome.sent / MIB:5.0f} MiB, "
            f"grew {memory.peak / MIB:5.1f} MiB"
        )
    assert (outcome.status, outcome.closed) == (status, True), outcome.response[:300]
    assert outcome.sent < TAKEN_AT_MOST and memory.peak < GROWTH_AT_MOST


def test_a_lying_content_length_gets_no_more_than_it_declared(server, capsys):
    """512 KiB declared, 2 GiB sent: the rest is never read as body; the server answers and closes."""
    declared = 512 * 1024
    with PeakGrowth(server) as memory:
        outcome = stream(server.port, head("/api/v1/bundles", declared, server.bearer()), GIB2, stop_on_answer=False)
    with capsys.disabled():
        print(
            f"\n{server.log_path.stem:9} {'lying Content-Length':40} {outcome.status} took "
            f"{outcome.sent / MIB:5.0f} MiB, grew {memory.peak / MIB:5.1f} MiB"
        )
    assert outcome.status == 202 and outcome.closed, outcome.response[:300]
    answer, _ = json.JSONDecoder().raw_decode(outcome.response.split(b"\r\n\r\n", 1)[1].decode())
    assert answer["size"] == declared  # staged: what it declared, and nothing of the rest
    assert outcome.sent < TAKEN_AT_MOST and memory.peak < GROWTH_AT_MOST


def test_a_body_within_the_limit_that_the_portal_leaves_unread_is_not_drained(server, capsys):
    """90 MiB without a token: 401 before reading; the server closes rather than read the rest (runserver would
    read it in one piece, and wait for all of it)."""
    declared = 90 * MIB
    with PeakGrowth(server) as memory:
        outcome = stream(server.port, head("/api/v1/bundles", declared), declared)
    with capsys.disabled():
        print(
            f"\n{server.log_path.stem:9} {'90 MiB, no token':40} {outcome.status} took "
            f"{outcome.sent / MIB:5.0f} MiB, grew {memory.peak / MIB:5.1f} MiB"
        )
    assert (outcome.status, outcome.closed) == (401, True), outcome.response[:300]
    assert outcome.sent < TAKEN_AT_MOST and memory.peak < GROWTH_AT_MOST


def test_a_refused_upload_of_a_known_account_is_recorded(server):
    outcome = stream(server.port, head("/api/v1/bundles", GIB2, server.bearer()), GIB2)
    assert outcome.status == 413 and b'"too_large"' in outcome.response
    rows = server.portal.query("SELECT code, size, submitted_by FROM extraction_rejection ORDER BY id DESC LIMIT 1")
    assert rows == [("too_large", GIB2, "api:feeder")]


def test_gunicorn_refuses_an_over_long_request_line(gunicorn):
    outcome = request(gunicorn.port, b"GET /admin/?q=" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert (outcome.status, outcome.closed) == (414, True)


def test_gunicorn_refuses_too_many_or_too_large_header_fields(gunicorn):
    many = "".join(f"X-Field-{i}: {i}\r\n" for i in range(60))
    large = "X-Large: " + "b" * 9000 + "\r\n"
    for extra in (many, large):
        outcome = request(gunicorn.port, f"GET /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode())
        assert (outcome.status, outcome.closed) == (431, True)


def test_gunicorn_cuts_a_client_sending_its_headers_slowly_and_serves_others(gunicorn):
    """One byte every half second never completes the headers: at its timeout (3 s) the worker answers gunicorn's
    own 500 and is replaced."""
    slow = slow_headers(gunicorn.port, seconds=30)
    assert slow.closed and slow.status in (None, 500)
    assert request(gunicorn.port, b"GET /admin/login/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").status == 200


def test_a_token_in_a_query_string_is_refused_and_never_logged(gunicorn):
    token = gunicorn.bearer().split()[-1]
    outcome = request(gunicorn.port, f"GET /api/v1/jobs?token={token} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
    assert outcome.status == 401 and b'"unauthenticated"' in outcome.response
    assert "GET /api/v1/jobs?token=[redacted]" in gunicorn.wait_for_log("/api/v1/jobs?token=")
    assert token not in gunicorn.log()


def test_a_lowercase_scheme_and_a_trailing_space_after_the_token_are_accepted(gunicorn):
    """As docs/api.md says: auth schemes are case-insensitive, and the server strips whitespace around a value."""
    token = gunicorn.bearer().split()[-1]
    head = f"GET /api/v1/jobs HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: bearer {token} \r\n\r\n"
    assert request(gunicorn.port, head.encode()).status == 200


def test_head_and_a_method_a_route_does_not_take_answer_through_gunicorn_as_the_api_says(gunicorn):
    """HEAD: the headers GET sends, Content-Length included, and no body on the wire; PUT: a JSON 405."""
    auth = f"Host: 127.0.0.1\r\n{gunicorn.bearer()}X-Request-Id: wire-1\r\n\r\n"
    got = request(gunicorn.port, f"GET /api/v1/jobs HTTP/1.0\r\n{auth}".encode())
    answered = request(gunicorn.port, f"HEAD /api/v1/jobs HTTP/1.0\r\n{auth}".encode())
    length = int(got.response.split(b"\r\n\r\n")[0].lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    assert (answered.status, answered.response.split(b"\r\n\r\n", 1)[1]) == (200, b""), answered.response
    assert (
        f"content-length: {length}".encode() in answered.response.lower()
        and b"x-request-id: wire-1" in answered.response.lower()
    )
    refused = request(gunicorn.port, f"PUT /api/v1/bundles HTTP/1.0\r\nContent-Length: 0\r\n{auth}".encode())
    assert (
        refused.status == 405
        and json.loads(refused.response.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "method_not_allowed"
    )
