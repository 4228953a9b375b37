"""docs/production.md's restore on real processes: a pg_dump, more work accepted, the dump restored, the processes
started again; the store noticed ahead of the database, intake closed, a replayed Idempotency-Key not extracted."""

import subprocess

import pytest
import requests

from tests import pdfs
from tests.conftest import PRODUCTION
from tests.test_scale import scale_database, shared_env  # noqa: F401 (scale_database: a fixture)
from tests.waiting import wait_until
from tests.webserver import WebServer

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not PRODUCTION, reason="pg_dump and pg_restore of PostgreSQL")]


def test_a_restored_database_notices_the_store_ahead_and_extracts_nothing_again(tmp_path, scale_database):
    import psycopg

    env = shared_env(scale_database)
    db = psycopg.connect(scale_database.replace("postgres://", "postgresql://"), autocommit=True)

    def value(sql: str):
        row = db.execute(sql).fetchone()
        return row and (row[0] if len(row) == 1 else row)

    web = WebServer("gunicorn", tmp_path / "host", **env)
    host, token = web.portal, web.bearer().split(": ", 1)[1].strip()

    def post(path, key: str) -> dict:
        answer = requests.post(
            f"http://127.0.0.1:{web.port}/api/v1/bundles",
            data=path.read_bytes(),
            headers={"Authorization": token, "Content-Type": "application/pdf", "Idempotency-Key": key},
            timeout=30,
        )
        assert answer.status_code in (200, 202), answer.text
        return answer.json()

    def start_clusters():
        host.start_worker()
        host.start_worker(PAGETRAIL_CLUSTER="intake")

    first, second = pdfs.jpeg_rgb(tmp_path), pdfs.mixed(tmp_path)
    dump = tmp_path / "pagetrail.dump"
    try:
        start_clusters()
        one = post(first, "key-1")
        wait_until(lambda: value("select count(*) from audit_manifest") == 1, 120, "the first job did not complete")
        subprocess.run(["pg_dump", "--format=custom", f"--file={dump}", scale_database], check=True)

        post(second, "key-2")  # accepted after the dump: its manifest and log position are only in the store
        wait_until(lambda: value("select count(*) from audit_manifest") == 2, 120, "the second job did not complete")
        web.stop(), host.stop()
        db.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() "
            "and pid <> pg_backend_pid()"
        )
        restore = ["pg_restore", "--clean", "--if-exists", "--no-owner", f"--dbname={scale_database}", str(dump)]
        subprocess.run(restore, check=True)
        host.manage("migrate", "--noinput")
        assert value("select count(*) from audit_manifest") == 1

        web = WebServer("gunicorn", tmp_path / "host", log_name="after-restore", **env)
        start_clusters()
        wait_until(lambda: value("select count(*) from audit_alert where kind = 'ledger_rollback'"), 60, "no alert")
        closed = "select count(*) from extraction_submissionswitch where not is_open"
        wait_until(lambda: value(closed), 60, "intake was not closed")

        assert post(first, "key-1")["id"] == one["id"]  # a key the dump holds replays its submission
        replayed = post(second, "key-2")  # its record was lost with the restore: a new submission
        job = f"select job_id from extraction_intake_submission where id = {int(replayed['id'])}"
        wait_until(lambda: value(job), 60, "the replayed upload was not accepted")
        taken = f"select picked_up_at is not null from extraction_job where id = ({job})"
        wait_until(lambda: value(taken), 60, "no worker took the replayed job")  # and held it: intake is closed
        held = value(f"select status, submitted_at is null from extraction_job where id = ({job})")
    finally:
        web.stop(), host.stop()

    assert replayed["state"] in ("pending", "accepted") and tuple(held) == ("queued", True)
    assert value("select count(*) from audit_manifest") == 1  # not extracted again while intake is closed
    assert value("select count(*) from extraction_job where status = 'completed'") == 1
    db.close()
