import io
import json
import threading

import pytest
from django.core.files.storage import storages
from django.core.management import call_command
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from extraction.intake import decision, policy, staging
from extraction.intake.staging import submit_bundle
from extraction.models import Bundle, Job, Rejection, Submission
from extraction.pdf.sandbox import stop_idle_children
from tests import pdfs, pdfs_intake
from tests.conftest import everything_stored, queued_tasks, read_stored, stored_names, temp_files

pytestmark = pytest.mark.django_db


def submit(path, **kwargs):
    with open(path, "rb") as fh:
        return submit_bundle(fh, filename=str(path), submitted_by="tester", **kwargs)


def test_it_accepts_a_pdf_and_creates_its_bundle_and_job(tmp_path):
    result = submit(pdfs.reused_on_three_pages(tmp_path), case_label="claim 7")
    assert result.accepted and result.created
    bundle = Bundle.objects.get()
    assert bundle.correlation_id == result.correlation_id
    assert (bundle.page_count, bundle.mime, bundle.case_label) == (3, "application/pdf", "claim 7")
    assert bundle.original_filename == "reused_on_three_pages.pdf"
    job = Job.objects.get()
    assert (job.pk, job.bundle, job.status, job.provider) == (result.job_id, bundle, "queued", "local")


def test_it_stores_the_input_under_its_sha256_in_the_input_store_only(tmp_path):
    result = submit(pdfs.jpeg_rgb(tmp_path))
    name = f"{result.correlation_id[:2]}/{result.correlation_id}.pdf"
    assert stored_names("inputs") == [name]
    assert read_stored("inputs", name) == (tmp_path / "jpeg_rgb.pdf").read_bytes()
    assert stored_names("outputs") == []


def test_it_enqueues_the_job_only_when_the_transaction_commits(tmp_path, django_capture_on_commit_callbacks):
    policy.in_force()  # its first version is an activity record, with a commit callback of its own
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        submit(pdfs.jpeg_rgb(tmp_path))
    assert queued_tasks() == 0
    assert len(callbacks) == 1
    callbacks[0]()
    assert queued_tasks() == 1


def test_it_returns_the_same_job_for_the_same_bytes(tmp_path, django_capture_on_commit_callbacks):
    path = pdfs.jpeg_rgb(tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        first, again = submit(path), submit(path)
    assert (again.job_id, again.correlation_id, again.created) == (first.job_id, first.correlation_id, False)
    assert (Bundle.objects.count(), Job.objects.count(), queued_tasks()) == (1, 1, 1)


def test_it_gives_a_file_sent_again_after_its_input_was_deleted_its_bundle_and_job_again(tmp_path):
    path = pdfs.jpeg_rgb(tmp_path)
    first = submit(path)
    name = f"{first.correlation_id[:2]}/{first.correlation_id}.pdf"
    storages["inputs"].delete(name)  # as retention deletes an input: the bundle stays

    again = submit(path)

    assert (again.accepted, again.job_id, again.created) == (True, first.job_id, False)
    assert (Bundle.objects.count(), Job.objects.count()) == (1, 1)
    assert read_stored("inputs", name) == path.read_bytes()


def test_it_looks_up_no_bundle_or_job_for_bytes_it_has_not_seen(tmp_path):
    policy.in_force()
    with CaptureQueriesContext(connection) as queries:
        result = submit(pdfs.jpeg_rgb(tmp_path))

    assert result.accepted and result.created
    lookups = [
        q["sql"]
        for q in queries
        if q["sql"].startswith("SELECT")
        and ('FROM "extraction_bundle"' in q["sql"] or 'FROM "extraction_job"' in q["sql"])
    ]
    assert lookups == []


def test_it_leaves_no_staged_upload_behind(tmp_path):
    submit(pdfs.jpeg_rgb(tmp_path))
    (tmp_path / "junk.pdf").write_bytes(b"not a pdf at all")
    submit(tmp_path / "junk.pdf")
    assert temp_files() == []


def test_it_records_a_refusal_and_creates_nothing_else(tmp_path):
    (tmp_path / "photo.pdf").write_bytes(pdfs.jpeg_bytes(pdfs.rgb_picture()))
    result = submit(tmp_path / "photo.pdf")
    assert (result.accepted, result.error_code) == (False, "not_pdf")
    assert "JPEG" in result.message
    rejection = Rejection.objects.get()
    assert (rejection.code, rejection.original_filename, rejection.submitted_by) == ("not_pdf", "photo.pdf", "tester")
    assert rejection.size == (tmp_path / "photo.pdf").stat().st_size and len(rejection.sha256) == 64
    assert (Bundle.objects.count(), Job.objects.count()) == (0, 0)
    assert everything_stored() == []


class EndlessStream:
    """A client that would send forever: the limit must stop the read, not the end of the body."""

    def __init__(self):
        self.sent = 0

    def read(self, n):
        self.sent += n
        return b"%PDF-1.7\n" + b"0" * (n - 9)


def test_it_stops_reading_an_upload_as_soon_as_it_passes_the_size_limit(settings):
    settings.PAGETRAIL_MAX_UPLOAD_BYTES = 3 * 1024 * 1024
    stream = EndlessStream()
    result = submit_bundle(stream, filename="huge.pdf", submitted_by="tester")
    assert (result.accepted, result.error_code) == (False, "too_large")
    assert stream.sent <= 4 * 1024 * 1024
    assert Rejection.objects.get().sha256 == ""
    assert everything_stored() == []


def test_it_keeps_only_the_basename_of_a_client_filename(tmp_path):
    with open(pdfs.jpeg_rgb(tmp_path), "rb") as fh:
        submit_bundle(fh, filename="../../etc/passwd.pdf", submitted_by="tester")
    assert Bundle.objects.get().original_filename == "passwd.pdf"


@pytest.mark.django_db(transaction=True)
def test_it_creates_one_bundle_and_one_job_when_two_submissions_race(tmp_path):
    data = pdfs.reused_on_three_pages(tmp_path).read_bytes()
    start, results = threading.Barrier(4), []

    def racer():
        start.wait()
        try:
            results.append(submit_bundle(io.BytesIO(data), filename="race.pdf", submitted_by="racer"))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=racer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({r.job_id for r in results}) == 1 and all(r.accepted for r in results)
    assert sum(r.created for r in results) == 1
    assert (Bundle.objects.count(), Job.objects.count()) == (1, 1)
    assert len(stored_names("inputs")) == 1


# ---------- whatever the file, intake answers with a code: no traceback, the batch goes on ----------


@pytest.fixture
def fresh_children():
    stop_idle_children()
    yield
    stop_idle_children()


def submit_command(*paths) -> list[dict]:
    out = io.StringIO()
    call_command("submit_bundle", "--json", "--here", *map(str, paths), stdout=out)
    return json.loads(out.getvalue())


def test_it_accepts_a_pdf_whose_stream_length_is_an_indirect_object(tmp_path):
    result = submit(pdfs_intake.indirect_length(tmp_path))

    assert result.accepted and Job.objects.get().pk == result.job_id


def test_it_records_a_file_whose_validation_crashed_as_a_rejection(tmp_path, monkeypatch, fresh_children):
    pdfs_intake.child_where_pikepdf_open(tmp_path, monkeypatch, 'raise TypeError("a bug")')

    result = submit(pdfs.jpeg_rgb(tmp_path))

    assert (result.accepted, result.error_code) == (False, "validator_crashed")
    assert Rejection.objects.get().code == "validator_crashed" and not Bundle.objects.exists()


def test_a_child_that_cannot_start_is_tried_once_more_then_refused_with_a_rejection(
    tmp_path, monkeypatch, fresh_children
):
    pdfs_intake.child_cannot_start(monkeypatch)

    result = submit(pdfs.jpeg_rgb(tmp_path))

    assert (result.accepted, result.error_code, result.retryable) == (False, "validator_crashed", True)
    assert "The PDF process could not start" in result.message and Submission.objects.get().tries == 2
    assert Rejection.objects.get().code == "validator_crashed" and not Bundle.objects.exists() and temp_files() == []


def test_the_command_reports_every_file_and_goes_on_after_a_refusal(tmp_path):
    (tmp_path / "photo.pdf").write_bytes(pdfs.jpeg_bytes(pdfs.rgb_picture()))
    paths = [pdfs_intake.indirect_length(tmp_path), tmp_path / "photo.pdf", pdfs.jpeg_rgb(tmp_path)]

    results = submit_command(*paths)

    assert [(r["path"], r["accepted"], r.get("error_code")) for r in results] == [
        (str(paths[0]), True, None),
        (str(paths[1]), False, "not_pdf"),
        (str(paths[2]), True, None),
    ]
    assert "JPEG image" in results[1]["message"] and results[2]["job_id"] == Job.objects.order_by("pk").last().pk


def test_the_command_reports_a_file_that_could_not_be_checked_and_goes_on(tmp_path, monkeypatch, fresh_children):
    pdfs_intake.child_cannot_start(monkeypatch)

    results = submit_command(pdfs.jpeg_rgb(tmp_path), pdfs.cmyk(tmp_path))

    outcomes = [(r["accepted"], r["error_code"], r["retryable"]) for r in results]
    assert outcomes == [(False, "validator_crashed", True)] * 2


def run_command(*args) -> list[dict]:
    out = io.StringIO()
    call_command("submit_bundle", "--json", *map(str, args), stdout=out)
    return json.loads(out.getvalue())


def test_the_command_without_an_intake_worker_says_so_when_its_wait_ends(tmp_path):
    [row] = run_command("--timeout", "0.3", pdfs.jpeg_rgb(tmp_path))

    assert (row["accepted"], row["state"], row["submission_id"]) == (False, "pending", Submission.objects.get().pk)
    assert "No intake worker decided it within 0.3 s" in row["message"] and "--here" in row["message"]
    assert (
        "PAGETRAIL_CLUSTER=intake manage.py qcluster, on the host whose intake queue is pagetrail-intake"
        in row["message"]
        and not Job.objects.exists()
    )


def test_the_command_with_no_wait_returns_the_pending_submissions_at_once(tmp_path):
    rows = run_command("--no-wait", pdfs.jpeg_rgb(tmp_path), pdfs.cmyk(tmp_path))

    assert [r["state"] for r in rows] == ["pending", "pending"] and Submission.objects.count() == 2
    assert all(r["message"].startswith("Queued for an intake worker") for r in rows)


def test_the_command_waits_for_a_decision_made_meanwhile(tmp_path):
    from extraction.management.commands.submit_bundle import Command

    submission = staging.receive(
        staging.stage(io.BytesIO(pdfs.jpeg_rgb(tmp_path).read_bytes()), filename="x.pdf", submitted_by="cli"),
        filename="x.pdf",
        submitted_by="cli",
        queued=False,
    )
    naps = []

    def worker_decides_while_the_command_sleeps(seconds):  # the injected sleep: a worker's decision meanwhile
        naps.append(seconds)
        decision.decide(submission.pk)

    Command().wait([submission], timeout=60, sleep=worker_decides_while_the_command_sleeps)
    assert submission.state == "accepted" and len(naps) == 1
