import hashlib
import json
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.ledger import manifests, signing
from audit.models import Asset, Finding, Manifest, VerificationRun
from audit.verification.verify import execute, start_run, verify_all
from extraction.intake.staging import submit_bundle
from extraction.models import Bundle, Job
from tests import pdfs
from tests.audit.chained import make_chained, write_chain_checkpoint
from tests.conftest import complete, read_stored, stored_names, write_stored

pytestmark = pytest.mark.django_db


@pytest.fixture
def completed(tmp_path):
    for factory in (pdfs.mixed, pdfs.reused_on_three_pages, pdfs.jpeg_rgb):
        complete(factory(tmp_path), filename="x.pdf")
    return Manifest.objects.order_by("sequence")


def kinds():
    return sorted(f.kind for f in verify_all()[0])


def test_it_records_a_passed_run_with_its_counts(completed):
    run = execute(start_run("auditor").pk)
    assert (run.status, run.findings_count, run.started_by) == ("passed", 0, "auditor")
    assert (run.manifests_total, run.manifests_done) == (3, 3)
    assert run.assets_total == run.assets_done == Asset.objects.count() == 8
    assert run.bytes_done == sum(Asset.objects.values_list("size", flat=True)) and run.finished_at


def test_progress_moves_while_a_run_runs_and_stays_final_after():
    run = start_run("auditor")
    assert not run.record_progress(assets_done=1)  # still queued
    run.mark_running()
    assert run.record_progress(assets_total=9, assets_done=5, bytes_done=100)
    run.mark_finished(0)
    assert not run.record_progress(assets_done=9)
    run.refresh_from_db()
    assert (run.assets_total, run.assets_done, run.bytes_done) == (9, 5, 100)


def test_every_step_that_goes_through_a_whole_store_gives_signs_of_life(completed, monkeypatch):
    """Found at 10,000 jobs: a step that re-hashes every input or walks a store ran for minutes with no sign of life,
    and a run's lease counts from its last one. Each such step calls the pulse once an item."""
    from audit.verification import verify

    write_stored("outputs", "stray.bin", b"a stray")  # the output walk goes on past its last named file
    callers = []
    monkeypatch.setattr(verify.Pulse, "__call__", lambda pulse: callers.append(sys._getframe(1).f_code.co_name))

    assert execute(start_run("auditor").pk).status == "failed"  # the stray
    assert {"check_inputs", "check_input_store", "_check_store"} <= set(callers)
    assert callers.count("check_inputs") == Bundle.objects.count() == 3
    assert callers.count("_check_store") == len(stored_names("outputs"))


def test_a_pulse_records_a_sign_of_life_once_a_second_at_most(monkeypatch):
    from audit.verification import verify

    run, now = start_run("auditor"), [1000.0]
    monkeypatch.setattr(verify.time, "monotonic", lambda: now[0])
    pulse, signs = verify.Pulse(run), []
    monkeypatch.setattr(run, "record_progress", lambda: signs.append(now[0]))
    for step in (0.5, 0.25, 0.25, 0.125, 2.0, 0.5):  # exact in binary
        now[0] += step
        pulse()
    assert signs == [1001.0, 1003.125]


def test_only_progress_counters_are_recorded_as_progress():
    with pytest.raises(TypeError):
        start_run("auditor").record_progress(findings_count=0)


def test_it_records_findings_linked_to_manifest_and_asset(completed):
    asset = Asset.objects.first()
    write_stored("outputs", asset.name, b"changed")
    run = execute(start_run("auditor").pk)
    assert run.status == "failed" and run.findings_count == 1
    finding = run.findings.get()
    assert (finding.kind, finding.asset, finding.manifest) == ("hash_mismatch", asset, asset.manifest)


def test_a_redelivered_run_task_does_nothing(completed):
    run = execute(start_run("auditor").pk)
    assert execute(run.pk).finished_at == run.finished_at
    assert Finding.objects.count() == 0


def test_it_verifies_only_the_chosen_bundle(completed):
    bundle = Bundle.objects.get(jobs__manifest=completed.first())
    write_stored("outputs", Asset.objects.exclude(manifest=completed.first()).first().name, b"elsewhere")
    run = execute(start_run("auditor", bundle=bundle).pk)
    assert (run.status, run.manifests_done, run.assets_done) == ("passed", 1, 6)


def test_it_verifies_a_date_range(completed):
    Manifest.objects.filter(pk=completed.first().pk).update(created_at=timezone.now() - timedelta(days=30))
    run = execute(start_run("auditor", date_from=timezone.now() - timedelta(days=1)).pk)
    assert run.manifests_done == 2


def test_it_finds_a_stray_file_in_the_output_store(completed):
    write_stored("outputs", "someone/put/this.png", b"stray")
    assert kinds() == ["unexpected_output"]


def test_it_finds_a_second_file_for_a_deterministic_name(completed):
    name = Asset.objects.first().name
    stem, ext = name.rsplit(".", 1)
    write_stored("outputs", f"{stem}_Ab3dE9x.{ext}", read_stored("outputs", name))
    assert kinds() == ["duplicate_name"]


def test_it_finds_manifests_that_swapped_places_in_the_chain(completed):
    make_chained(completed)  # schemas 1-3: each manifest names the one before it
    Manifest.objects.filter(sequence=2).update(sequence=99)
    Manifest.objects.filter(sequence=3).update(sequence=2)
    Manifest.objects.filter(sequence=99).update(sequence=3)
    assert kinds().count("chain_break") >= 2


def test_it_finds_manifests_that_swapped_places_in_the_ledger(completed):
    first, _, third = completed
    Manifest.objects.filter(pk=first.pk).update(sequence=10**6)
    Manifest.objects.filter(pk=third.pk).update(sequence=first.sequence)
    Manifest.objects.filter(pk=first.pk).update(sequence=third.sequence)
    assert kinds() == ["position_mismatch", "position_mismatch"]


def test_it_finds_a_job_past_its_deadline(completed, tmp_path):
    with open(pdfs.cmyk(tmp_path), "rb") as fh:
        job_id = submit_bundle(fh, filename="late.pdf", submitted_by="t").job_id
    Job.objects.filter(pk=job_id).update(deadline=timezone.now() - timedelta(minutes=1))
    [finding] = verify_all()[0]
    assert (finding.kind, finding.job_id) == ("past_deadline", job_id)


def test_the_frozen_chains_checkpoint_stays_checked(completed):
    old = make_chained(completed)
    checkpoint = write_chain_checkpoint()
    assert (checkpoint.chain_length, checkpoint.head_sha256) == (3, old[-1].sha256)
    stored = json.loads(read_stored("outputs", checkpoint.storage_name))
    statement = stored["checkpoint"]
    assert signing.signature_ok(manifests.canonical_bytes(statement), stored["signature"], statement["key_id"])
    assert kinds() == []


def test_no_chain_checkpoint_is_written_any_more(completed):
    from audit import tasks

    make_chained(completed)
    tasks.write_checkpoint()  # the schedule signs the ledger's head alone
    assert stored_names("outputs", "checkpoints") == []


def test_it_catches_a_rewritten_database_against_an_earlier_checkpoint(completed):
    make_chained(completed)
    write_chain_checkpoint()
    # An insider re-hashes the last manifest and the chain head so that the rows agree with each other.
    last = completed.last()
    body = last.body.replace('"page_count":1', '"page_count":2').encode()
    sha = hashlib.sha256(body).hexdigest()
    Manifest.objects.filter(pk=last.pk).update(body=body.decode(), sha256=sha, signature=signing.sign(body))
    write_stored("outputs", last.storage_name, body)
    assert "checkpoint_mismatch" in kinds()


def test_it_reports_a_checkpoint_file_signed_with_another_key(completed):
    make_chained(completed)
    checkpoint = write_chain_checkpoint()
    forged = {"checkpoint": json.loads(checkpoint.body), "signature": signing.hmac_sign(checkpoint.body.encode(), "x")}
    write_stored("outputs", checkpoint.storage_name, json.dumps(forged).encode())
    assert kinds() == ["checkpoint_mismatch"]


def test_it_marks_a_run_that_crashed_as_error(completed, monkeypatch):
    import audit.verification.verify

    monkeypatch.setattr(audit.verification.verify, "check_asset", lambda asset: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        execute(start_run("auditor").pk)
    assert VerificationRun.objects.get().status == "error"
