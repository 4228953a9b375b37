"""No secret reaches a log line: real servers (runserver as `make run` starts it, gunicorn as `make serve` does) get
tokens, passwords, cookies, Authorization and signatures in the query, the headers, form fields and JSON bodies on
every route family, and every line they log is searched for them."""

import base64
import json
import secrets

import pytest

from tests.webserver import WebServer, request

pytestmark = pytest.mark.slow

SECRET = {
    "token": "pt_" + secrets.token_urlsafe(24),
    "password": "Hunter2-" + secrets.token_hex(8),
    "session": secrets.token_hex(16),
    "csrf": secrets.token_hex(16),  # 32 characters: a CSRF secret Django accepts as cookie and as form field
    "signature": secrets.token_hex(16),
    "other_csrf": secrets.token_hex(16),  # a well-formed CSRF token that is not the cookie's: refused, 403
}
BASIC = base64.b64encode(f"admin:{SECRET['password']}".encode()).decode()
QUERY = f"token={SECRET['token']}&password={SECRET['password']}&signature={SECRET['signature']}"
FORM = f"username=admin&password={SECRET['password']}&csrfmiddlewaretoken={SECRET['csrf']}&token={SECRET['token']}"
FORGED = FORM.replace(SECRET["csrf"], SECRET["other_csrf"])
BODY = json.dumps({"token": SECRET["token"], "password": SECRET["password"], "signature": SECRET["signature"]})
COOKIE = f"Cookie: sessionid={SECRET['session']}; csrftoken={SECRET['csrf']}\r\nX-CSRFToken: {SECRET['csrf']}\r\n"
ROUTES = [  # (method, path, content type, body): API, admin, the public log endpoints, the login
    ("GET", "/api/v1/jobs", "", ""),
    ("GET", "/api/v1/jobs/999999", "", ""),
    ("POST", "/api/v1/bundles", "application/json", BODY),
    ("GET", "/api/v1/log/checkpoint", "", ""),
    ("GET", "/api/v1/log/consistency", "", ""),
    ("GET", "/admin/extraction/job/", "", ""),
    ("POST", "/admin/extraction/bundle/add/", "application/x-www-form-urlencoded", FORM),
    ("POST", "/admin/login/", "application/x-www-form-urlencoded", FORM),
    ("POST", "/admin/login/", "application/json", BODY),
    ("POST", "/admin/login/", "application/x-www-form-urlencoded", FORGED),
]


@pytest.fixture(scope="module", params=[("runserver", "json"), ("gunicorn", "json"), ("gunicorn", "plain")])
def server(request, tmp_path_factory):
    kind, log_format = request.param
    web = WebServer(kind, tmp_path_factory.mktemp(f"{kind}-{log_format}"), PAGETRAIL_LOG_FORMAT=log_format)
    yield web
    web.stop()


def send(server: WebServer, method: str, path: str, kind: str, body: str, authorization: str):
    framing = f"Content-Type: {kind}\r\nContent-Length: {len(body)}\r\n" if body else ""
    head = f"{method} {path}?{QUERY} HTTP/1.0\r\nHost: 127.0.0.1\r\n{authorization}{COOKIE}{framing}\r\n"
    return request(server.port, (head + body).encode()).status


def test_no_secret_sent_to_any_route_reaches_a_log_line(server):
    valid = server.bearer()
    authorizations = [valid, f"Authorization: Bearer {SECRET['token']}\r\n", f"Authorization: Basic {BASIC}\r\n"]
    answered = [send(server, *route, authorization) for route in ROUTES for authorization in authorizations]
    log = server.wait_for_log("/admin/login/")
    server.wait_for_log("Not Found: /api/v1/jobs/999999")  # a line that carries the request, as JSON's `request`
    assert None not in answered and {401, 404, 403} <= set(answered), answered
    assert "[redacted]" in log
    leaked = {
        name: value for name, value in {**SECRET, "basic": BASIC, "valid": valid.split()[-1]}.items() if value in log
    }
    assert leaked == {}, log[-3000:]
