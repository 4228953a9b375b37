import pytest

from audit.models import Manifest
from audit.retention.output_sweep import sweep_outputs
from extraction.intake.staging import submit_bundle
from extraction.models import Job
from extraction.runner import run_job
from tests import pdfs
from tests.conftest import stored_names, write_stored

pytestmark = pytest.mark.django_db


def submitted(path) -> Job:
    with open(path, "rb") as fh:
        return Job.objects.get(pk=submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)


def test_it_removes_outputs_of_a_failed_job_and_keeps_those_of_a_completed_one(tmp_path):
    done, failed = submitted(pdfs.mixed(tmp_path)), submitted(pdfs.jpeg_rgb(tmp_path))
    run_job(done.pk)
    kept = stored_names("outputs", done.bundle.correlation_id)
    Job.objects.filter(pk=failed.pk).update(status="failed", extractor_version="v")
    write_stored("outputs", f"{failed.bundle.correlation_id}/v/p00001-000.jpg", b"stored before the job failed")
    assert sweep_outputs()["removed"] == 1
    assert stored_names("outputs", failed.bundle.correlation_id) == []
    assert stored_names("outputs", done.bundle.correlation_id) == kept


def test_it_removes_a_manifest_file_whose_commit_was_lost(tmp_path):
    job = submitted(pdfs.mixed(tmp_path))
    run_job(job.pk)
    manifest_name = Manifest.objects.get().storage_name
    orphan = manifest_name.rsplit("/", 1)[0] + "/manifest-" + "f" * 64 + ".json"
    write_stored("outputs", orphan, b"{}")
    sweep_outputs()
    names = stored_names("outputs")
    assert orphan not in names and manifest_name in names


def test_it_sweeps_each_terminal_job_once(tmp_path):
    run_job(submitted(pdfs.jpeg_rgb(tmp_path)).pk)
    sweep_outputs()
    assert Job.objects.filter(outputs_swept_at__isnull=True).count() == 0
    assert sweep_outputs() == {"removed": 0}


def test_a_job_whose_sweep_failed_is_swept_by_the_next_run(tmp_path, monkeypatch):
    import audit.retention.output_sweep

    job = submitted(pdfs.jpeg_rgb(tmp_path))
    Job.objects.filter(pk=job.pk).update(status="failed", extractor_version="v")
    write_stored("outputs", f"{job.bundle.correlation_id}/v/p00001-000.jpg", b"stored before the job failed")

    def unreachable(job):
        raise OSError("the output store is unreachable")

    with monkeypatch.context() as patch:
        patch.setattr(audit.retention.output_sweep, "_sweep_job_outputs", unreachable)
        with pytest.raises(OSError):
            sweep_outputs()
    assert Job.objects.get(pk=job.pk).outputs_swept_at is None
    assert sweep_outputs()["removed"] == 1 and stored_names("outputs", job.bundle.correlation_id) == []
