"""Scale-out on the production profile: two `qcluster` hosts on PostgreSQL + Redis + S3, one SIGKILLed."""

import json
import os
import uuid

import pytest
from django.conf import settings

from tests import pdfs
from tests.conftest import PRODUCTION
from tests.procs import Portal
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not PRODUCTION, reason="needs the production profile")]

BUNDLES = 200


def small_bundles(directory, count):
    """Distinct one- or two-page bundles: a different scan on each, a shared logo on some."""
    paths = []
    for n in range(count):
        doc = pdfs.Doc()
        logo = pdfs.jpeg(doc, pdfs.rgb_picture())
        doc.page(pdfs.jpeg(doc, pdfs.pattern_picture(n)), *([logo] if n % 2 else []))
        if n % 3 == 0:
            doc.page(logo)
        paths.append(doc.save(directory / f"bundle-{n:03d}.pdf"))
    return paths


@pytest.fixture
def scale_database():
    """A database of its own for the deployment under test, dropped afterwards."""
    import psycopg

    name = f"pagetrail_scale_{uuid.uuid4().hex[:8]}"
    base = settings.DATABASES["default"]
    admin_url = f"postgresql://{base['USER']}@{base['HOST']}:{base['PORT']}/postgres"
    with psycopg.connect(admin_url, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    yield f"postgres://{base['USER']}@{base['HOST']}:{base['PORT']}/{name}"
    with psycopg.connect(admin_url, autocommit=True) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Host:
    """One worker host of the deployment: its own temp dir, the shared database, broker and buckets."""

    def __init__(self, tmp_path, name, shared_env):
        self.portal = Portal(tmp_path / name, PAGETRAIL_TEMP_DIR=tmp_path / name / "temp", **shared_env)
        self.temp = tmp_path / name / "temp"


def shared_env(database_url):
    run = uuid.uuid4().hex[:8]
    keep = ("AWS_S3_ENDPOINT_URL", "AWS_S3_REGION_NAME", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    return {
        **{k: os.environ[k] for k in keep},
        "DATABASE_URL": database_url,
        "REDIS_URL": os.environ["REDIS_URL"],
        "PAGETRAIL_QUEUE_NAME": f"scale-{run}",
        "PAGETRAIL_INPUT_BUCKET": settings.STORAGES["inputs"]["OPTIONS"]["bucket_name"],
        "PAGETRAIL_OUTPUT_BUCKET": settings.STORAGES["outputs"]["OPTIONS"]["bucket_name"],
        "PAGETRAIL_INPUT_PREFIX": f"scale-{run}/inputs",
        "PAGETRAIL_OUTPUT_PREFIX": f"scale-{run}/outputs",
        "PAGETRAIL_CLAIM_LEASE_SECONDS": 5,
        "PAGETRAIL_REQUEUE_AFTER_SECONDS": 10,
        # Every host shares these secrets: django-q2 signs tasks with SECRET_KEY.
        "SECRET_KEY": uuid.uuid4().hex * 2,
        "PAGETRAIL_MANIFEST_KEY": uuid.uuid4().hex,
        "PAGETRAIL_SIGNING_KEY": settings.PAGETRAIL_SIGNING_KEY,
        "PAGETRAIL_MLDSA_SIGNING_KEY": settings.PAGETRAIL_MLDSA_SIGNING_KEY,
    }


def counts(portal) -> dict:
    rows = portal.manage_json("job_status")
    return {state: sum(r["state"] == state for r in rows) for state in {r["state"] for r in rows}}


def files_in(directory) -> list:
    return [p for p in directory.rglob("*") if p.is_file()]


def test_two_hosts_finish_every_job_once_after_one_is_killed(tmp_path, scale_database):
    env = shared_env(scale_database)
    a, b = Host(tmp_path, "host-a", env), Host(tmp_path, "host-b", env)
    a.portal.manage("migrate", "--noinput")
    submitted = a.portal.manage_json("submit_bundle", "--here", *small_bundles(tmp_path, BUNDLES), timeout=900)
    assert all(r["accepted"] for r in submitted) and len({r["job_id"] for r in submitted}) == BUNDLES
    try:
        killed = a.portal.start_worker()
        b.portal.start_worker()
        wait_until(
            lambda: counts(a.portal).get("completed", 0) >= BUNDLES // 4,
            timeout=600,
            interval=1.0,  # each look starts a manage.py
            what=lambda: f"not a quarter of the jobs completed: {counts(a.portal)}",
        )
        a.portal.kill_worker(killed)  # host A dies with claimed and prefetched tasks that Redis forgets
        # No manual step: host B's scheduled reconciler must re-drive what host A held.
        wait_until(
            lambda: counts(b.portal).get("completed") == BUNDLES,
            timeout=600,
            interval=1.0,  # each look starts a manage.py
            what=lambda: f"not all jobs completed: {counts(b.portal)}",
        )
        a.portal.start_worker()  # host A comes back; its worker start sweeps its temp dir
        wait_until(lambda: not files_in(a.temp), timeout=120, what=lambda: f"host A's temp holds {files_in(a.temp)}")
    finally:
        a.portal.stop(), b.portal.stop()

    rows = a.portal.manage_json("job_status")
    assert len(rows) == BUNDLES and {r["state"] for r in rows} == {"completed"}
    with_logo = sum(1 for n in range(BUNDLES) if n % 2 or n % 3 == 0)
    assert sum(r["assets"] for r in rows) == BUNDLES + with_logo  # one set of outputs per job, no duplicates
    # A killed host may have written a manifest file and lost its commit: gone after the output sweep, which
    # the schedule runs every minute (the invariant is "no output without its manifest, after a sweep").
    a.portal.manage("sweep_outputs")
    verify = a.portal.manage("verify_manifests", "--json", check=False)
    report = json.loads(verify.stdout)
    assert verify.returncode == 0 and report["manifests"] == BUNDLES, report["findings"]
    for host in (a, b):
        assert files_in(host.temp) == []
