import pytest

from audit.models import Manifest
from audit.services import sweep_outputs
from extraction.models import Job
from extraction.services import run_job, submit_bundle
from tests import pdfs

pytestmark = pytest.mark.django_db


def submitted(path) -> Job:
    with open(path, "rb") as fh:
        return Job.objects.get(pk=submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)


def job_outputs(private_stores, job):
    prefix = private_stores / "outputs" / job.bundle.correlation_id
    return sorted(p.name for p in prefix.rglob("*") if p.is_file())


def test_it_removes_outputs_of_a_failed_job_and_keeps_those_of_a_completed_one(tmp_path, private_stores):
    done, failed = submitted(pdfs.mixed(tmp_path)), submitted(pdfs.jpeg_rgb(tmp_path))
    run_job(done.pk)
    kept = job_outputs(private_stores, done)
    prefix = private_stores / "outputs" / failed.bundle.correlation_id / "v"
    prefix.mkdir(parents=True)
    Job.objects.filter(pk=failed.pk).update(status="failed", extractor_version="v")
    (prefix / "p00001-000.jpg").write_bytes(b"stored before the job failed")
    assert sweep_outputs()["removed"] == 1
    assert job_outputs(private_stores, failed) == [] and job_outputs(private_stores, done) == kept


def test_it_removes_a_manifest_file_whose_commit_was_lost(tmp_path, private_stores):
    job = submitted(pdfs.mixed(tmp_path))
    run_job(job.pk)
    manifest_path = private_stores / "outputs" / Manifest.objects.get().storage_name
    orphan = manifest_path.with_name("manifest-" + "f" * 64 + ".json")
    orphan.write_bytes(b"{}")
    sweep_outputs()
    assert not orphan.exists() and manifest_path.exists()


def test_it_sweeps_each_terminal_job_once(tmp_path):
    run_job(submitted(pdfs.jpeg_rgb(tmp_path)).pk)
    sweep_outputs()
    assert Job.objects.filter(outputs_swept_at__isnull=True).count() == 0
    assert sweep_outputs() == {"removed": 0}
