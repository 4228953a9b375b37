import hashlib
import json
import threading

import pikepdf
import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from audit.models import Asset, Manifest, Placement, ReviewFlag
from audit.verification.verify import verify_all
from core.stores import job_work_dir
from extraction.intake.staging import submit_bundle
from extraction.models import Attempt, Job, idempotency_key
from extraction.pdf import versions
from extraction.pdf.sandbox import stop_idle_children
from extraction.providers.local import EXTRACTOR_VERSION
from extraction.runner import run_job
from extraction.temp_sweep import sweep_temp
from tests import pdfs, pdfs_intake
from tests.conftest import read_stored, stored_names, temp_files, write_stored

pytestmark = pytest.mark.django_db


def accepted_job(path) -> Job:
    with open(path, "rb") as fh:
        result = submit_bundle(fh, filename=path.name, submitted_by="tester")
    assert result.accepted, result.message
    return Job.objects.get(pk=result.job_id)


def manifest_document(job) -> dict:
    return json.loads(Manifest.objects.get(job=job).body)


def test_it_completes_a_job_with_its_manifest_assets_and_placements(tmp_path):
    job = accepted_job(pdfs.reused_on_three_pages(tmp_path))
    assert run_job(job.pk) == "completed"
    job.refresh_from_db()
    assert job.status == "completed" and job.manifest_durable_at >= job.provider_finished_at
    asset = Asset.objects.get()
    assert list(asset.placements.values_list("page", "index_on_page")) == [(1, 0), (2, 0), (3, 0)]
    document = manifest_document(job)
    assert document["assets"][0]["pages"] == [1, 2, 3]
    assert document["input"] == {
        "sha256": job.bundle.correlation_id,
        "size": job.bundle.size,
        "page_count": 3,
        "encrypted": False,
        "repaired": False,
        "leading_bytes": 0,
        "policy": {"version": 1, "found": []},  # schema 6: the intake policy version that accepted it, and its finds
        "attachments": [],
    }
    # Schema 5 states the correlation id once, as what it is: the input's sha256.
    assert document["schema_version"] == 6 and "correlation_id" not in document


def test_it_records_the_versions_of_the_libraries_that_wrote_the_assets(tmp_path):
    job = accepted_job(pdfs.mixed(tmp_path))
    run_job(job.pk)

    libraries = manifest_document(job)["extractor"]["libraries"]
    assert libraries == versions.libraries()
    assert (libraries["pikepdf"], libraries["qpdf"]) == (pikepdf.__version__, pikepdf.__libqpdf_version__)
    assert {"pillow", "pypdfium2", "pdfium", "zlib-ng"} <= libraries.keys()


def test_it_keys_a_job_by_the_extractors_own_version_not_its_libraries(tmp_path):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    run_job(job.pk)

    assert job.extractor_version == manifest_document(job)["extractor"]["version"] == EXTRACTOR_VERSION
    assert job.idempotency_key == idempotency_key(job.bundle.correlation_id, "pagetrail-pikepdf", EXTRACTOR_VERSION)


def test_it_names_assets_from_correlation_id_version_page_and_index(tmp_path):
    job = accepted_job(pdfs.mixed(tmp_path))
    run_job(job.pk)
    names = list(Asset.objects.order_by("page", "index_on_page").values_list("name", flat=True))
    prefix = f"{job.bundle.correlation_id}/{job.extractor_version.replace('+', '_')}/"
    assert names == [
        prefix + n
        for n in (
            "p00001-000.jpg",
            "p00002-000.png",
            "p00002-001.tif",
            "p00003-000.tif",
            "p00004-000.tif",
            "p00005-000.jp2",
        )
    ]


def test_it_counts_placements_apart_from_stored_assets_on_a_240_page_bundle(tmp_path):
    job = accepted_job(pdfs.bundle(tmp_path))
    run_job(job.pk)
    # 240 scans with 4 byte-identical repeats + one header drawn on every page.
    assert Asset.objects.count() == 240 - 4 + 1
    assert Placement.objects.count() == 480
    assert verify_all()[0] == []


def test_it_removes_the_jobs_temp_files_once_it_is_terminal(tmp_path):
    job = accepted_job(pdfs.mixed(tmp_path))
    run_job(job.pk)
    assert temp_files() == []


def test_it_ignores_a_redelivered_task_for_a_completed_job(tmp_path):
    job = accepted_job(pdfs.mixed(tmp_path))
    run_job(job.pk)
    before = (Manifest.objects.get().sha256, Asset.objects.count(), Attempt.objects.count())
    assert run_job(job.pk) == "not-claimed"
    assert (Manifest.objects.get().sha256, Asset.objects.count(), Attempt.objects.count()) == before


def test_it_records_each_try_as_an_attempt(tmp_path):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    run_job(job.pk)
    assert list(job.attempts.values_list("number", "kind", "outcome")) == [(1, "submit", "ok"), (2, "extract", "ok")]


@pytest.mark.django_db(transaction=True)  # outside a test's transaction: no savepoints among the queries
def test_it_runs_a_job_in_a_fixed_number_of_queries(tmp_path):
    run_job(accepted_job(pdfs.jpeg_rgb(tmp_path)).pk)  # the chain row and the signing key exist from here on
    job = accepted_job(pdfs.mixed(tmp_path))
    with CaptureQueriesContext(connection) as captured:
        assert run_job(job.pk) == "completed"
    # 19, not 22: each attempt's number follows the last this worker opened (one MAX read, not one per
    # attempt), the manifest names that attempt (no COUNT), and the provider's end and the temp peak are
    # one UPDATE. Neither transaction control (logged on SQLite only) nor the broker's enqueue counts.
    # Then 21: the ledger's append reads the subtrees its leaf pairs with and writes what it completes.
    # Then 22 (schema 4): the manifest reads the leaf it will be (its sequence) and covers the signing key's period
    # first (a key published then takes its own leaf before it), and no longer moves the hash chain's head.
    # Then 23: who listens for its webhook events (one query; nobody does, so its document is never built).
    # Then 24: its previews are asked for in the database (a PreviewRequest row), so a lost task is asked again.
    # Then 25 (schema 6): the manifest names the intake policy version that accepted the input (its row).
    # Then 26: its page hints are asked for the same way (a HintRun row); reading pages for them waits for a worker.
    # Then 24: the manifest is signed without checking the key's publication again (covered under the same lock a
    # moment before), and its leaf is appended at its sequence without reading the leaf count again.
    # Then 25: the ML-DSA-44 key's period is covered as the Ed25519 key's is (its own SigningKey row).
    # Then 24: the intake policy version is read with the locked job and its bundle (one statement).
    # Then 22: neither key's period is read again once this process found it covered under the ledger row's keys_stamp,
    # read with the ledger's lock (every change to the keys moves it under that lock).
    # Then 21: a job's first claim knows its first attempt is number 1 (no worker had claimed it: no MAX read).
    # Then 20: whether anybody listens for its webhook events is read with the locked job (nobody does: no query).
    statements = [q["sql"] for q in captured.captured_queries if not q["sql"].startswith(("BEGIN", "COMMIT"))]
    assert len([sql for sql in statements if "django_q_" not in sql]) == 20
    assert manifest_document(job)["assets"][0]["attempt"] == job.attempts.count() == 2


def test_it_locks_the_ledger_then_the_job_and_marks_the_job_completed_after_its_evidence(tmp_path):
    """Every ledger writer's order (extraction.completion): the ledger's lock before the job's row; the other
    order deadlocks with a writer that holds the ledger and waits for the job."""
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    with CaptureQueriesContext(connection) as captured:
        assert run_job(job.pk) == "completed"
    statements = [q["sql"] for q in captured.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    ledger = next(i for i, sql in enumerate(statements) if 'FROM "audit_manifestchain"' in sql)
    completion = [sql for sql in statements[ledger + 1 :] if '"audit_manifestchain"' not in sql]
    assert 'FROM "extraction_job"' in completion[0]
    manifest = next(i for i, sql in enumerate(completion) if sql.startswith('INSERT INTO "audit_manifest"'))
    completed = next(i for i, sql in enumerate(completion) if "SET \"status\" = 'completed'" in sql)
    assert manifest < completed


def test_each_manifests_sequence_is_its_leaf_index_and_none_names_a_previous_manifest(tmp_path):
    first, second = accepted_job(pdfs.jpeg_rgb(tmp_path)), accepted_job(pdfs.cmyk(tmp_path))
    run_job(first.pk), run_job(second.pk)
    a, b = Manifest.objects.order_by("sequence")
    assert (a.job_id, b.job_id) == (first.pk, second.pk) and a.sequence < b.sequence
    for manifest in (a, b):
        signed = json.loads(manifest.body)
        assert manifest.sequence == manifest.log_leaf.index == signed["sequence"]  # in its row and its signed body
        assert manifest.previous_sha256 is None and "previous_sha256" not in signed


def test_it_fails_a_job_whose_output_name_holds_other_bytes(tmp_path):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    name = f"{job.bundle.correlation_id}/{job.extractor_version.replace('+', '_')}/p00001-000.jpg"
    write_stored("outputs", name, b"someone else's bytes")
    assert run_job(job.pk) == "failed"
    job.refresh_from_db()
    assert job.error_code == "output_conflict" and "already holds other bytes" in job.error_message
    assert stored_names("outputs") == [name] and read_stored("outputs", name) == b"someone else's bytes"
    assert not Manifest.objects.exists()


def test_it_reuses_the_assets_a_crashed_try_stored_and_writes_no_duplicates(tmp_path, monkeypatch):
    import audit.ledger.manifest_writing

    job = accepted_job(pdfs.mixed(tmp_path))

    def crash(*args, **kwargs):
        raise RuntimeError("worker died after storing assets, before the manifest")

    with monkeypatch.context() as patch:
        patch.setattr(audit.ledger.manifest_writing, "_write", crash)
        with pytest.raises(RuntimeError):
            run_job(job.pk)
    stored_by_crash = stored_names("outputs")
    assert len(stored_by_crash) == 6 and not Manifest.objects.exists()
    Job.objects.filter(pk=job.pk).update(claimed_until="2000-01-01T00:00:00Z")  # the lease ran out
    assert run_job(job.pk) == "completed"
    assert stored_names("outputs") == sorted(stored_by_crash + [Manifest.objects.get().storage_name])
    assert verify_all()[0] == []


@pytest.mark.django_db(transaction=True)
def test_it_writes_one_manifest_when_two_workers_run_the_same_job(tmp_path):
    job = accepted_job(pdfs.mixed(tmp_path))
    start, outcomes = threading.Barrier(2), []

    def worker(name):
        start.wait()
        try:
            outcomes.append(run_job(job.pk, worker=name))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["completed", "not-claimed"]
    assert Manifest.objects.count() == 1


def test_it_sweeps_temp_dirs_of_terminal_and_unknown_jobs_but_not_active_ones(tmp_path):
    active, done = accepted_job(pdfs.jpeg_rgb(tmp_path)), accepted_job(pdfs.cmyk(tmp_path))
    Job.objects.filter(pk=done.pk).update(status="failed")
    for job_id in (active.pk, done.pk, 999):
        (job_work_dir(job_id) / "partial.png").write_bytes(b"x")
    assert sweep_temp()["removed"] == 2
    assert (job_work_dir(active.pk) / "partial.png").exists()
    assert not (job_work_dir(done.pk) / "partial.png").exists()


def test_it_fails_a_job_whose_stored_input_no_longer_has_its_hash_and_extracts_nothing(tmp_path):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    write_stored("inputs", job.bundle.input_name, pdfs.mixed(tmp_path).read_bytes())  # other bytes, a valid PDF

    assert run_job(job.pk) == "failed"

    job.refresh_from_db()
    assert job.error_code == "input_changed" and stored_names("outputs") == []
    assert not Manifest.objects.exists()


def test_it_stores_each_output_once_and_its_bytes_hash_as_the_manifest_says(tmp_path):
    """Whether the store links the file (same disk) or copies it (S3), what it holds is what was hashed."""
    job = accepted_job(pdfs.mixed(tmp_path))
    run_job(job.pk)

    entries = {a["name"]: a["sha256"] for a in manifest_document(job)["assets"]}
    stored = {name: hashlib.sha256(read_stored("outputs", name)).hexdigest() for name in entries}
    assert stored == entries and temp_files() == []


def test_it_never_manifests_a_file_that_is_not_the_size_the_provider_reported(tmp_path):
    from extraction.completion import complete_job
    from extraction.providers import JobReport, ProviderError, ReportedImage

    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    (tmp_path / "a.png").write_bytes(b"twelve bytes")
    asset = ReportedImage(
        key="a.png", sha256="0" * 64, size=13, content_type="image/png", width=1, height=1, placements=((1, 0),)
    )

    with pytest.raises(ProviderError) as caught:
        complete_job(job, JobReport(state="completed", pages=1, assets=(asset,)), {"a.png": tmp_path / "a.png"}, 1)

    assert caught.value.code == "asset_mismatch" and "12 bytes, not the 13" in caught.value.message
    assert not Manifest.objects.exists() and stored_names("outputs") == []


# ---------- an extractor that fails on the input ends the job, it does not retry until the deadline ----------
# The child really fails: the test's `sitecustomize` replaces pikepdf.open in children started after the job
# was accepted (see pdfs_intake.child_where_pikepdf_open); no knob of the product is involved.


@pytest.fixture
def fresh_children():
    stop_idle_children()
    yield
    stop_idle_children()


def test_it_fails_a_job_whose_extraction_raised_with_extractor_crashed_at_once(tmp_path, monkeypatch, fresh_children):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    pdfs_intake.child_where_pikepdf_open(tmp_path, monkeypatch, 'raise ValueError("PNG predictor overflow")')

    assert run_job(job.pk) == "failed"

    job.refresh_from_db()
    assert job.error_code == "extractor_crashed"
    assert "(ValueError: PNG predictor overflow)" in job.error_message
    assert temp_files() == [] and not Manifest.objects.exists()


def test_it_fails_a_job_whose_child_quit_twice_after_one_retry(tmp_path, monkeypatch, fresh_children):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    pdfs_intake.child_where_pikepdf_open(tmp_path, monkeypatch, "os._exit(3)")

    assert run_job(job.pk) == "retry"
    Job.objects.filter(pk=job.pk).update(claimed_until="2000-01-01T00:00:00Z")  # its wake-up is due
    assert run_job(job.pk) == "failed"

    job.refresh_from_db()
    assert job.error_code == "extractor_crashed" and "exit status 3" in job.error_message
    assert list(job.attempts.values_list("kind", "outcome")) == [
        ("submit", "ok"),
        ("extract", "retry"),
        ("extract", "retry"),
    ]


def test_it_retries_a_job_whose_child_cannot_start(tmp_path, monkeypatch, fresh_children):
    job = accepted_job(pdfs.jpeg_rgb(tmp_path))
    pdfs_intake.child_cannot_start(monkeypatch)

    assert [run_job(job.pk), _due(job), run_job(job.pk)] == ["retry", None, "retry"]

    assert list(job.attempts.filter(kind="extract").values_list("error_code", flat=True)) == ["child_unavailable"] * 2
    job.refresh_from_db()
    assert job.status != "failed" and job.error_code == ""


def _due(job):
    Job.objects.filter(pk=job.pk).update(claimed_until="2000-01-01T00:00:00Z")


@pytest.mark.parametrize(
    "factory, read",
    [
        (pdfs.encrypted_without_user_password, {"encrypted": True, "repaired": False, "leading_bytes": 0}),
        (pdfs_intake.damaged_xref, {"encrypted": False, "repaired": True, "leading_bytes": 0}),
        (
            lambda d: pdfs_intake.junk_before_header(d, 100),
            {"encrypted": False, "repaired": False, "leading_bytes": 100},
        ),
    ],
)
def test_the_manifest_records_how_the_input_was_read(tmp_path, factory, read):
    job = accepted_job(factory(tmp_path))
    assert run_job(job.pk) == "completed"
    document = manifest_document(job)
    assert {key: document["input"][key] for key in read} == read
    flagged = ReviewFlag.objects.filter(manifest__job=job).exists()
    assert flagged == read["repaired"]  # a rebuilt cross-reference table is for a person to look (policy: flag)
