"""Shared test helpers: every test gets private stores and a temp area of its own.

The same tests run on the embedded profile (file-system stores) and on the production profile
(S3 buckets on a loopback S3 server, PostgreSQL, Redis); see tests/profile.py.
"""

import contextlib
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.base import ContentFile
from django.core.files.storage import storages

from core import stores
from core.logs import end_request

STORES = ("inputs", "outputs")
PRODUCTION = django_settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


@pytest.fixture(scope="session", autouse=True)
def s3_buckets():
    """The production profile's buckets exist on the loopback S3 server (an operator creates them in real life)."""
    import boto3

    for alias in STORES:
        options = django_settings.STORAGES[alias]["OPTIONS"]
        if "bucket_name" in options:
            s3 = boto3.client("s3", endpoint_url=options["endpoint_url"], region_name=options["region_name"])
            if options["bucket_name"] not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
                s3.create_bucket(Bucket=options["bucket_name"])


@pytest.fixture(scope="session", autouse=True)
def stores_outside_tests():
    """What no test's own stores hold (the test database's migrations, the flush after a transactional test)
    goes to stores of its own, fresh after each test: each (re)created database appends ledger records (roles,
    the signing key) whose store witness markers must not meet a later database's (audit/ledger/store_witness.py)."""
    fresh_stores_outside_tests()
    yield
    # Only this process's: under `make check`'s workers (pytest-xdist) another process's stores are still in use.
    for prefix in _outside["prefixes"]:
        shutil.rmtree(django_settings.DATA_DIR / prefix, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def cache_of_this_process():
    """The embedded profile's cache is files in the data dir, shared by every process on the host (rate limits count
    there); under `make check`'s workers (pytest-xdist) each worker gets its own, since tests clear it."""
    from django.test.utils import override_settings

    worker, cache = os.environ.get("PYTEST_XDIST_WORKER"), django_settings.CACHES["default"]
    if not worker or not cache["BACKEND"].endswith("FileBasedCache"):
        yield
        return
    with override_settings(
        CACHES={**django_settings.CACHES, "default": {**cache, "LOCATION": f"{cache['LOCATION']}-{worker}"}}
    ):
        yield


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """The test database's migrations wrote their markers to the stores outside tests: the first test's flush
    (a transactional test's) goes to fresh ones, as every later flush does."""
    fresh_stores_outside_tests()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # after the test's fixtures, the database's flush included
    if django_settings.configured and _outside["override"] is not None:
        fresh_stores_outside_tests()


_outside: dict = {"override": None, "prefixes": []}


def fresh_stores_outside_tests() -> None:
    from django.test.utils import override_settings

    if _outside["override"] is not None:
        _outside["override"].disable()
    prefix = f"outside-tests/{uuid.uuid4().hex}"
    _outside["prefixes"].append(prefix)
    configured = dict(django_settings.STORAGES)
    for alias in STORES:
        backend = dict(configured[alias])
        s3 = backend["BACKEND"].endswith("S3Storage")
        location = f"{prefix}/{alias}" if s3 else django_settings.DATA_DIR / prefix / alias
        backend["OPTIONS"] = {**backend["OPTIONS"], "location": location}
        configured[alias] = backend
    _outside["override"] = override_settings(STORAGES=configured)
    _outside["override"].enable()


@pytest.fixture(autouse=True)
def no_log_context_left():
    """A view called outside Django's request cycle (RequestFactory, a raised exception) never sends
    request_finished, whose receiver clears the request's log ids: no test's ids reach the next test's lines."""
    yield
    end_request()


@pytest.fixture(autouse=True)
def empty_broker():
    """A Redis queue outlives test transactions: start each test with nothing queued.

    (The ORM broker's queue is a table, emptied with each test's transaction.)
    """
    if django_settings.Q_CLUSTER.get("redis"):
        from django_q.brokers import get_broker

        get_broker().purge_queue()
        get_broker(django_settings.PAGETRAIL_PREVIEW_QUEUE).purge_queue()
        get_broker(django_settings.PAGETRAIL_INTAKE_QUEUE).purge_queue()


@pytest.fixture(autouse=True)
def second_factor_not_required(settings):
    """The production profile requires a second factor of superusers; tests of other behaviour log in with
    Django's test client alone. The tests of the requirement turn it on (tests/test_mfa.py, test_browser.py)."""
    settings.PAGETRAIL_REQUIRE_MFA = False


@pytest.fixture(autouse=True)
def loopback_webhook_receivers(settings):
    """The webhook tests' receivers listen on loopback, an internal address deliveries otherwise refuse; the tests
    of that refusal turn it off (tests/extraction/test_webhook_addresses.py)."""
    settings.PAGETRAIL_WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Every admin_client and created user hashes a password, and every login checks one: the production
    hasher is slow by design and would dominate the suite. No test is about the hasher's strength; the
    deployments a test starts in processes of their own (tests/procs.py) keep the production setting."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@contextlib.contextmanager
def small_tmpfs(root: Path, size: str = "256k"):
    """A real file system of `size` mounted at `root` for the block (root only: a test using it skips elsewhere)."""
    root.mkdir(parents=True, exist_ok=True)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(root)]
    if os.geteuid() != 0 or subprocess.run(mount, capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root)], check=True)


def fill(root: Path) -> None:
    """Fill the file system holding `root` (with a file `filler`) until a write fails."""
    with contextlib.suppress(OSError), open(root / "filler", "wb") as fh:
        while True:
            fh.write(b"\0" * 4096)
            fh.flush()


def queued_tasks() -> int:
    from django_q.brokers import get_broker

    return get_broker().queue_size()


def lose_the_queue() -> None:
    """A Redis FLUSHDB of the queue's db, or (embedded profile) the ORM queue's rows deleted."""
    from django_q.models import OrmQ

    if PRODUCTION:
        import redis

        redis.from_url(django_settings.REDIS_URL).flushdb()
    else:
        OrmQ.objects.all().delete()
    assert queued_tasks() == 0


def run_intake_tasks(limit: int = 20) -> int:
    """Run what the intake queue holds in this process, as its worker would (a retry it queues runs too)."""
    from django_q.brokers import get_broker
    from django_q.signing import SignedPackage

    from extraction import tasks

    broker, ran = get_broker(django_settings.PAGETRAIL_INTAKE_QUEUE), 0
    while ran < limit and (batch := broker.dequeue()):
        for ack_id, payload in batch:
            task = SignedPackage.loads(payload)
            assert task["func"] == "extraction.tasks.decide_submission", task["func"]
            tasks.decide_submission(*task["args"])
            broker.acknowledge(ack_id)
            ran += 1
    return ran


@pytest.fixture(autouse=True)
def private_stores(tmp_path, settings):
    """Inputs, outputs and temp of this test only: tmp_path directories, or a fresh prefix per bucket."""
    root = tmp_path / "data"
    settings.TEMP_ROOT = root / "temp"
    test_prefix = uuid.uuid4().hex
    configured = dict(settings.STORAGES)
    for alias in STORES:
        backend = dict(configured[alias])
        if backend["BACKEND"].endswith("S3Storage"):
            backend["OPTIONS"] = {**backend["OPTIONS"], "location": f"{test_prefix}/{alias}"}
        else:
            backend["OPTIONS"] = {**backend["OPTIONS"], "location": root / alias}
        configured[alias] = backend
    settings.STORAGES = configured
    return root


def stored_names(alias: str, prefix: str = "") -> list[str]:
    """Every name under `prefix` in a store, recursively, whatever the backend."""
    storage = storages[alias]
    try:
        dirs, files = storage.listdir(prefix)
    except FileNotFoundError:
        return []
    join = (lambda n: f"{prefix}/{n}") if prefix else (lambda n: n)
    names = [join(f) for f in files]
    for d in dirs:
        names += stored_names(alias, join(d))
    return sorted(names)


def read_stored(alias: str, name: str) -> bytes:
    with storages[alias].open(name, "rb") as fh:
        return fh.read()


def write_stored(alias: str, name: str, data: bytes) -> None:
    """Replace a stored file behind Pagetrail's back (tamper tests)."""
    storage = storages[alias]
    storage.delete(name)
    assert storage.save(name, ContentFile(data)) == name


def delete_stored(alias: str, name: str) -> None:
    storages[alias].delete(name)


def temp_files() -> list:
    root = stores.temp_root()
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def everything_stored() -> list:
    return [*stored_names("inputs"), *stored_names("outputs"), *temp_files()]


def approved_policy(name: str = "claims", drafted_by: str = "retention-admin", **fields):
    """A retention policy version drafted by one person and approved by another (four eyes), in force."""
    from django.contrib.auth.models import Group, User

    from audit.retention import approval as retention_approval
    from audit.retention import enforcement as retention

    draft = retention.new_version(name, drafted_by, **fields)
    approver, created = User.objects.get_or_create(username="approver", defaults={"is_staff": True})
    if created:
        approver.groups.add(Group.objects.get(name="Retention approver"))
    # One instant for the count and the approval: SQLite's clock has whole seconds, so a count taken in the second
    # a bundle arrived, then an approval in the next, would disagree about a window of 0 days.
    at = retention.database_now()
    retention_approval.approve(draft, approver, seen_files=retention.would_delete(draft, at)["files"], at=at)
    return draft


def complete(path, **fields):
    """Submit one PDF and run its job through the real PDF child; returns the newest manifest."""
    from audit.models import Manifest
    from extraction.intake.staging import submit_bundle
    from extraction.runner import run_job

    with open(path, "rb") as fh:
        run_job(submit_bundle(fh, filename=fields.pop("filename", path.name), submitted_by="t", **fields).job_id)
    return Manifest.objects.order_by("-sequence").first()


@pytest.fixture
def completed(tmp_path):
    """The manifest of a completed job of the mixed bundle (JPEG, PNG, TIFF and JPEG 2000 images)."""
    from tests import pdfs

    return complete(pdfs.mixed(tmp_path), filename="x.pdf")


@pytest.fixture
def three_page_manifest(tmp_path):
    """The manifest of a completed three-page bundle (one image reused on each page), uploaded by staff."""
    from tests import pdfs

    return complete(pdfs.reused_on_three_pages(tmp_path), filename="three.pdf")
