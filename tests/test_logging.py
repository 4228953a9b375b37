"""Log lines carry the correlation id and job id, as JSON when asked, and never a secret."""

import io
import json
import logging

import pytest
from pythonjsonlogger.json import JsonFormatter

from core.logs import ContextFilter, job_context, scrub
from extraction.intake.staging import submit_bundle
from extraction.runner import run_job
from tests import pdfs


@pytest.fixture
def json_lines():
    """The settings' JSON formatter and filter on a handler we can read."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter("%(levelname)s %(name)s %(correlation_id)s %(job_id)s %(message)s"))
    logging.getLogger().addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logging.getLogger().removeHandler(handler)


@pytest.mark.django_db
def test_every_line_about_a_job_carries_its_correlation_id_and_job_id(json_lines, tmp_path):
    with open(pdfs.mixed(tmp_path), "rb") as fh:
        result = submit_bundle(fh, filename="x.pdf", submitted_by="t")
    run_job(result.job_id)
    lines = [line for line in json_lines() if line["name"].startswith("extraction")]
    assert lines and all(line["correlation_id"] == result.correlation_id for line in lines)
    assert f"job {result.job_id}: completed" in {line["message"] for line in lines}
    assert any(line["job_id"] == result.job_id for line in lines)


def test_lines_outside_a_job_have_empty_ids(json_lines):
    logging.getLogger("pagetrail.test").warning("nothing to do with a job")
    [line] = [entry for entry in json_lines() if entry["name"] == "pagetrail.test"]
    assert (line["correlation_id"], line["job_id"]) == ("", None)


@pytest.mark.parametrize(
    "secret, line",
    [
        ("sk-live-123456", "calling with Authorization: Bearer sk-live-123456"),
        ("pt_AbCdEfGhIjKlMnOpQrStUv", "token pt_AbCdEfGhIjKlMnOpQrStUv was used"),
        ("c2lnbmF0dXJl", "GET https://bucket.s3/x.png?X-Amz-Signature=c2lnbmF0dXJl&X-Amz-Expires=300"),
        ("hunter2", "api_key=hunter2 in the config"),
        ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "new secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw for claims"),
    ],
)
def test_secrets_are_scrubbed_from_every_line(json_lines, secret, line):
    with job_context("abc", 1):
        logging.getLogger("pagetrail.test").error(line)
    assert secret not in json.dumps(json_lines()) and "[redacted]" in scrub(line)


def test_extra_fields_are_scrubbed_like_the_message(json_lines):
    """Django logs each refused request with the request itself as `extra`; JSON prints every extra field."""
    fields = {"request": "<WSGIRequest: GET '/api/v1/jobs?token=hunter2&password=hunter3'>", "api_token": "hunter4"}
    logging.getLogger("pagetrail.test").warning("Unauthorized: /api/v1/jobs", extra={**fields, "status_code": 401})
    [line] = [entry for entry in json_lines() if entry["name"] == "pagetrail.test"]
    assert "hunter" not in json.dumps(line) and line["status_code"] == 401
    assert line["request"] == "<WSGIRequest: GET '/api/v1/jobs?token=[redacted]&password=[redacted]'>"


def test_a_traceback_is_scrubbed_in_json_too(json_lines):
    try:
        raise RuntimeError("upstream said: Authorization: Bearer pt_AbCdEfGhIjKlMnOpQrStUv rejected")
    except RuntimeError:
        logging.getLogger("pagetrail.test").exception("the call failed")
    [line] = [entry for entry in json_lines() if entry["name"] == "pagetrail.test"]
    assert "pt_AbCdEfGhIjKlMnOpQrStUv" not in json.dumps(line) and "Traceback" in line["exc_info"]


def test_the_access_log_of_runserver_is_scrubbed(caplog):
    from django.conf import settings

    config = settings.LOGGING["loggers"]["django.server"]
    assert config["handlers"] == ["console"] and "context" in settings.LOGGING["handlers"]["console"]["filters"]
    record = logging.LogRecord(
        "django.server",
        logging.INFO,
        __file__,
        1,
        '"%s" %s %s',
        ("GET /api/v1/jobs?token=pt_AbCdEfGhIjKlMnOpQrStUv HTTP/1.1", "401", "80"),
        None,
    )
    ContextFilter().filter(record)
    assert "pt_AbCdEfGhIjKlMnOpQrStUv" not in record.getMessage()


@pytest.mark.django_db
def test_a_token_in_the_query_string_is_never_accepted(client):
    from extraction.accounts import ServiceAccount

    account = ServiceAccount.objects.create(name="query")
    token = account.issue_token()
    for query in (f"token={token}", f"access_token={token}", f"Authorization=Bearer%20{token}"):
        assert client.get(f"/api/v1/jobs?{query}").status_code == 401
