"""One upload followed by one id through the JSON logs of every process: web server, intake, jobs, previews."""

import hashlib
import json

import pytest
import requests

from tests import pdfs
from tests.waiting import wait_until
from tests.webserver import WebServer

pytestmark = pytest.mark.slow


def json_lines(text: str) -> list[dict]:
    lines = []
    for line in text.splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue  # a line some library printed itself (qcluster's banner), not a log record
    return lines


def test_an_upload_is_followed_from_its_request_to_its_previews_by_its_correlation_id(tmp_path):
    server = WebServer("gunicorn", tmp_path / "portal", PAGETRAIL_LOG_FORMAT="json")
    portal = server.portal
    try:
        for queue in ("", "pagetrail-intake", "pagetrail-previews"):
            portal.start_worker(queue)
        body = pdfs.mixed(tmp_path).read_bytes()
        sha = hashlib.sha256(body).hexdigest()
        answer = requests.post(
            f"http://127.0.0.1:{server.port}/api/v1/bundles",
            data=body,
            headers={"Authorization": server.bearer().split(": ", 1)[1].strip(), "Content-Type": "application/pdf"},
            timeout=30,
        )
        assert answer.status_code == 202, answer.text
        [(job_id,)] = portal.wait_for("select job_id from extraction_intake_submission where job_id is not null")
        portal.wait_for("select count(*) > 0 from audit_pagepreview")
        [(manifest_id,)] = portal.query("select id from audit_manifest where job_id = ?", job_id)

        def about_the_upload(path) -> list[dict]:
            return [line for line in json_lines(path.read_text()) if line.get("correlation_id") == sha]

        # worker-0 runs jobs, worker-1 intake, worker-2 previews (started in that order)
        logs = [server.log_path, *(portal.data_dir / f"worker-{n}.log" for n in (1, 0, 2))]
        wait_until(
            lambda: any(line["message"].startswith("previews of manifest") for line in about_the_upload(logs[3])),
            60,
            "the previews worker logged nothing about the upload",
        )
        web, intake, jobs, previews = (about_the_upload(path) for path in logs)
    finally:
        server.stop()
        portal.stop()

    access = [line for line in web if line["logger"] == "gunicorn.access"]
    assert access and "POST /api/v1/bundles" in access[0]["message"] and access[0]["request_id"]
    assert any(line["job_id"] == job_id and "accepted as job" in line["message"] for line in intake)
    said = {line["message"] for line in jobs if line["job_id"] == job_id}
    assert any("claimed by" in m for m in said) and f"job {job_id}: manifest {manifest_id} durable" in " ".join(said)
    assert any(line["job_id"] == job_id for line in previews)
    every = web + intake + jobs + previews
    assert all(line.get("host") for line in every)
