"""/healthz and /readyz as a load balancer calls them: by the host's address, over plain HTTP, without a login."""

import json

import pytest

from tests.conftest import PRODUCTION
from tests.webserver import WebServer, request

pytestmark = pytest.mark.django_db
BY_ADDRESS = "10.0.0.7"  # not in ALLOWED_HOSTS: a balancer probes each host by its address


def probe(client, path: str):
    response = client.get(path, HTTP_HOST=BY_ADDRESS)
    return response.status_code, json.loads(response.content)


def test_healthz_answers_without_the_database_a_login_or_an_allowed_host(client, settings, django_assert_num_queries):
    settings.SECURE_SSL_REDIRECT = True  # PAGETRAIL_HTTPS: every other page redirects plain HTTP
    with django_assert_num_queries(0):
        assert probe(client, "/healthz") == (200, {"status": "ok"})
    assert client.get("/admin/login/", HTTP_HOST=BY_ADDRESS).status_code == 400  # the host check holds elsewhere


def test_readyz_answers_ready_when_the_database_the_broker_and_both_stores_answer(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert probe(client, "/readyz") == (200, {"status": "ready"})


def test_readyz_names_a_store_that_cannot_be_reached(client, settings, tmp_path):
    configured = dict(settings.STORAGES)
    options = dict(configured["outputs"]["OPTIONS"])
    if PRODUCTION:
        options["bucket_name"] = "pagetrail-no-such-bucket"
    else:
        (tmp_path / "a-file").write_bytes(b"")
        options["location"] = tmp_path / "a-file" / "outputs"  # under a file: nothing can ever be written there
    configured["outputs"] = {**configured["outputs"], "OPTIONS": options}
    settings.STORAGES = configured

    status, body = probe(client, "/readyz")
    assert status == 503 and body["status"] == "not_ready" and list(body["failed"]) == ["outputs"]
    assert body["failed"]["outputs"].startswith("The outputs store cannot be reached.")


@pytest.mark.skipif(not PRODUCTION, reason="the embedded profile's broker is the database")
def test_readyz_names_a_broker_that_does_not_answer(client, monkeypatch):
    from django_q.conf import Conf

    from tests.webserver import free_port

    monkeypatch.setattr(Conf, "REDIS", f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    status, body = probe(client, "/readyz")
    assert status == 503 and list(body["failed"]) == ["broker"]
    assert body["failed"]["broker"] == "The task broker does not answer. (ConnectionError)"


@pytest.mark.slow
def test_a_gunicorn_host_whose_database_is_gone_is_alive_and_not_ready(tmp_path):
    web = WebServer("gunicorn", tmp_path / "host", PAGETRAIL_DB_CONN_MAX_AGE=0)
    try:

        def get(path: str):
            outcome = request(web.port, f"GET {path} HTTP/1.0\r\nHost: {BY_ADDRESS}\r\n\r\n".encode())
            return outcome.status, json.loads(outcome.response.split(b"\r\n\r\n", 1)[1])

        assert get("/healthz") == (200, {"status": "ok"}) and get("/readyz") == (200, {"status": "ready"})
        database = tmp_path / "host" / "pagetrail.sqlite3"
        database.rename(database.with_suffix(".moved"))
        database.mkdir()  # where the file was: SQLite cannot open it

        status, body = get("/readyz")
        assert status == 503 and set(body["failed"]) == {"database", "broker"}  # the ORM broker's queue is a table
        assert get("/healthz") == (200, {"status": "ok"})
        assert "not ready: database: OperationalError" in web.log()
    finally:
        web.stop()


def answered(client, path: str):
    """The probe's answer, from a thread: a probe that hangs fails the test instead of hanging it."""
    import threading

    outcome: list = []
    asking = threading.Thread(target=lambda: outcome.append(probe(client, path)), daemon=True)
    asking.start()
    asking.join(HANG)
    assert outcome, f"{path} did not answer within {HANG} s"
    return outcome[0]


HANG = 30  # far above the probes' bound: only a probe without timeouts gets near it


@pytest.fixture
def hanging():
    from tests.listeners import Silent

    listener = Silent()
    yield listener
    listener.close()


@pytest.mark.skipif(not PRODUCTION, reason="PostgreSQL over the network")
def test_readyz_names_a_database_that_accepts_and_never_answers(client, settings, hanging, monkeypatch):
    from django.db import connection

    settings.PAGETRAIL_READY_TIMEOUT_SECONDS = 1
    monkeypatch.setitem(connection.settings_dict, "PORT", hanging.port)  # the probe's own connection goes there
    status, body = answered(client, "/readyz")
    assert status == 503 and list(body["failed"]) == ["database"]
    assert body["failed"]["database"].startswith("The database does not answer. (")


@pytest.mark.skipif(not PRODUCTION, reason="the embedded profile's broker is the database")
def test_readyz_names_a_broker_that_accepts_and_never_answers(client, settings, hanging, monkeypatch):
    from django_q.conf import Conf

    settings.PAGETRAIL_READY_TIMEOUT_SECONDS = 0.5
    monkeypatch.setattr(Conf, "REDIS", f"redis://127.0.0.1:{hanging.port}/0")
    status, body = answered(client, "/readyz")
    assert status == 503 and body["failed"] == {"broker": "The task broker does not answer. (TimeoutError)"}


@pytest.mark.skipif(not PRODUCTION, reason="an S3 store")
def test_readyz_names_a_store_that_accepts_and_never_answers(client, settings, hanging):
    settings.PAGETRAIL_READY_TIMEOUT_SECONDS = 0.5
    configured = dict(settings.STORAGES)
    options = {**configured["inputs"]["OPTIONS"], "endpoint_url": f"http://127.0.0.1:{hanging.port}"}
    settings.STORAGES = {**configured, "inputs": {**configured["inputs"], "OPTIONS": options}}
    status, body = answered(client, "/readyz")
    assert status == 503 and list(body["failed"]) == ["inputs"]
    assert body["failed"]["inputs"] == "The inputs store cannot be reached. (ReadTimeoutError)"
