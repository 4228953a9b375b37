import io
import threading

import pytest
from django.db import connections

from extraction.models import Bundle, Job, Rejection
from extraction.services import submit_bundle
from tests import pdfs
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
