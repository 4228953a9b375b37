"""docs/production.md followed on loopback (production profile): its commands in its order, gunicorn with the
web unit's configuration behind a stand-in for nginx's headers, the three clusters by role, one upload through
the API to a verified manifest."""

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests

from core.processes import ROOT
from tests import pdfs
from tests.conftest import PRODUCTION
from tests.procs import Portal
from tests.test_scale import scale_database, shared_env  # noqa: F401 (scale_database: a fixture)
from tests.waiting import wait_until
from tests.webserver import free_port

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not PRODUCTION, reason="the guide's PostgreSQL, Redis and S3")]
SITE = "pagetrail.acme.example"
# What the guide's section 2 sets in /etc/pagetrail.env, and what nginx sends gunicorn (deploy/nginx/pagetrail.conf).
GUIDE_ENV = {
    "ALLOWED_HOSTS": SITE,
    "CSRF_TRUSTED_ORIGINS": f"https://{SITE}",
    "PAGETRAIL_HTTPS": "true",
    "PAGETRAIL_PROXY_COUNT": "1",
    "PAGETRAIL_BASE_URL": f"https://{SITE}",
}
AS_NGINX = {"Host": SITE, "X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}


def test_the_production_guide_runs_end_to_end(tmp_path, scale_database):
    host = Portal(tmp_path / "var-lib-pagetrail", **shared_env(scale_database), **GUIDE_ENV)
    host.manage("migrate", "--noinput")
    host.manage("collectstatic", "--noinput")
    deploy_check = host.manage("check", "--deploy", check=False)
    assert deploy_check.returncode == 0 and "no issues" in deploy_check.stdout, (
        deploy_check.stdout + deploy_check.stderr
    )
    host.env["DJANGO_SUPERUSER_PASSWORD"] = uuid.uuid4().hex
    host.manage("createsuperuser", "--noinput", "--username", "first-admin", "--email", "ops@acme.example")
    enrolment = host.manage("mfa_enrolment_code", "first-admin")
    assert enrolment.stdout.strip()
    token = host.manage(
        "shell",
        "-c",
        "from extraction.accounts import ServiceAccount as A; print(A.objects.create(name='f').issue_token())",
    ).stdout.split()[-1]

    port = free_port()
    unit = ROOT / "deploy/systemd/pagetrail-web.service"
    assert "portal/gunicorn.conf.py" in unit.read_text()
    gunicorn = [
        str(Path(sys.executable).parent / "gunicorn"),
        "-c",
        "portal/gunicorn.conf.py",
        "-b",
        f"127.0.0.1:{port}",
    ]
    log = open(tmp_path / "gunicorn.log", "w")
    web = subprocess.Popen([*gunicorn, "portal.wsgi"], cwd=ROOT, env=host.env, stdout=log, stderr=subprocess.STDOUT)
    try:
        for role in ("intake", "jobs", "previews"):  # the units' only difference: PAGETRAIL_CLUSTER
            host.start_worker(**({"PAGETRAIL_CLUSTER": role} if role != "jobs" else {}))
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _answers(f"{base}/readyz"), 60, lambda: (tmp_path / "gunicorn.log").read_text())
        answer = requests.post(
            f"{base}/api/v1/bundles",
            data=pdfs.mixed(tmp_path).read_bytes(),
            headers={**AS_NGINX, "Authorization": f"Bearer {token}", "Content-Type": "application/pdf"},
            timeout=30,
        )
        assert answer.status_code == 202, answer.text
        status_url = answer.json()["status_url"]

        def manifest():
            seen = requests.get(
                f"{base}{status_url}", headers={**AS_NGINX, "Authorization": f"Bearer {token}"}, timeout=30
            )
            job = seen.json().get("job") or {}
            return job.get("state") == "completed" and job

        job = wait_until(manifest, 180, "the upload's job did not complete")
    finally:
        web.terminate(), web.wait(30), host.stop(), log.close()

    names = json.loads(host.manage("job_status", "--json").stdout)
    assert [r["state"] for r in names] == ["completed"] and job
    verify = host.manage("verify_manifests", "--json", check=False)
    assert verify.returncode == 0 and json.loads(verify.stdout)["manifests"] == 1
    heartbeats = host.manage(
        "shell",
        "-c",
        "from extraction.models import ClusterHeartbeat as H; print(sorted(H.objects.values_list('queue', flat=True)))",
    )
    queue = host.env["PAGETRAIL_QUEUE_NAME"]
    assert heartbeats.stdout.strip().endswith(str(sorted([queue, f"{queue}-intake", f"{queue}-previews"])))


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).status_code == 200
    except requests.RequestException:
        return False
