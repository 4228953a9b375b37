"""The output store witnesses the database: a database that lost its newest appends (a restore, a crash that
lost the last transactions) cannot sign a log position again."""

import json

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.urls import reverse

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import recovery as ledger_recovery
from audit.ledger import signing, store_witness
from audit.models import Alert, CaseMap, LogCheckpoint, LogLeaf, Manifest, RecoveredRecord
from audit.verification.verify import verify_all
from audit.verifier import notes
from core.stores import outputs
from extraction.intake.staging import submit_bundle
from extraction.kill_switch import set_submissions
from extraction.models import Job, SubmissionSwitch
from extraction.runner import run_job
from tests import pdfs
from tests.audit.test_tlog import forget_subtrees_completed_by
from tests.conftest import read_stored, write_stored

pytestmark = pytest.mark.django_db


@pytest.fixture
def witnessed(tmp_path, django_capture_on_commit_callbacks):
    """Three completed jobs whose markers reached the output store, as they do after each commit."""
    for factory in (pdfs.mixed, pdfs.reused_on_three_pages, pdfs.jpeg_rgb):
        with django_capture_on_commit_callbacks(execute=True), open(factory(tmp_path), "rb") as fh:
            run_job(submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)
    return Manifest.objects.order_by("sequence")


def lose_the_newest_append() -> Manifest:
    """The database as a restore from before the newest manifest leaves it; the output store keeps everything.
    The manifest returned still holds its leaf as it was (`lost.log_leaf.index`, the position lost)."""
    newest = Manifest.objects.order_by("-sequence").select_related("job__bundle", "log_leaf").first()
    job, bundle = newest.job, newest.job.bundle
    with connection.cursor() as cursor:
        for table, column, value in (
            ("audit_placement", "manifest_id", newest.pk),
            ("audit_previewrequest", "manifest_id", newest.pk),
            ("audit_pagehint", "manifest_id", newest.pk),
            ("audit_hintrun", "manifest_id", newest.pk),
            ("audit_logleaf", "manifest_id", newest.pk),
            ("audit_asset", "manifest_id", newest.pk),
            ("audit_manifest", "id", newest.pk),
            ("extraction_attempt", "job_id", job.pk),
            ("extraction_intake_submission", "job_id", job.pk),
            ("extraction_job", "id", job.pk),
            ("extraction_bundle", "id", bundle.pk),
        ):
            cursor.execute(f"DELETE FROM {table} WHERE {column} = %s", [value])
    # (the hash chain's head row stays: since schema 4 a manifest's append leaves it as it was)
    forget_subtrees_completed_by(newest.log_leaf.index)
    return newest


def test_each_committed_position_has_its_marker_in_the_output_store(witnessed):
    # the positions migrate took (roles, the signing key) were witnessed by the stores outside tests (conftest.py)
    appended = LogLeaf.objects.filter(index__gte=witnessed.first().log_leaf.index).select_related(*LogLeaf.RECORDS)
    assert [(leaf.index, leaf.manifest) for leaf in appended] == [(m.sequence, m) for m in witnessed]
    for leaf in appended:
        with outputs().open(store_witness.marker_name(leaf.index), "rb") as fh:
            assert fh.read() == store_witness.marker(leaf)
    assert store_witness.check_at_start() == {"ledger": "in_step", "size": LogLeaf.objects.count()}


def test_a_rolled_back_database_cannot_sign_the_position_again(witnessed, tmp_path):
    lost = lose_the_newest_append()
    with open(pdfs.flate_gray(tmp_path), "rb") as fh:
        job_id = submit_bundle(fh, filename="next.pdf", submitted_by="t").job_id
    run_job(job_id)
    assert not Manifest.objects.filter(sequence=lost.sequence).exists()  # the lost position was not signed again
    assert Job.objects.get(pk=job_id).status != Job.Status.COMPLETED
    alert = Alert.objects.get(kind="ledger_rollback", status=Alert.Status.OPEN)
    assert f"log position {lost.log_leaf.index}" in alert.message
    assert not SubmissionSwitch.submissions_open()


def test_a_worker_start_finds_the_store_ahead_and_stops_intake(witnessed):
    lost = lose_the_newest_append()
    assert store_witness.check_at_start() == {"ledger": "rolled_back", "position": lost.log_leaf.index}
    assert Alert.objects.filter(kind="ledger_rollback").exists() and not SubmissionSwitch.submissions_open()


def test_a_verification_run_names_the_position_the_database_lost(witnessed):
    lost = lose_the_newest_append()
    found = [f for f in verify_all()[0] if f.kind == "ledger_rollback"]
    assert [(f.name, f.detail) for f in found] == [
        (
            lost.storage_name,
            f"The output store holds log position {lost.log_leaf.index} (manifest {lost.sequence}), "
            "which the database lacks.",
        )
    ]


def test_a_worker_start_writes_a_marker_a_crash_lost(witnessed):
    newest = LogLeaf.objects.order_by("-index").first()
    outputs().delete(store_witness.marker_name(newest.index))  # the worker died between the commit and the marker
    assert store_witness.check_at_start() == {"ledger": "in_step", "size": newest.index + 1}
    assert outputs().exists(store_witness.marker_name(newest.index))


def test_a_failed_append_leaves_no_marker(witnessed, django_capture_on_commit_callbacks):
    from django.db import transaction

    following = LogLeaf.objects.count()
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError):
        with transaction.atomic():
            leaf = LogLeaf(index=following, manifest=Manifest.objects.first(), leaf_hash="00" * 32)
            store_witness.witness_on_commit(leaf)
            raise RuntimeError("the commit failed")
    assert not outputs().exists(store_witness.marker_name(following))


def test_a_position_committed_by_another_worker_after_this_one_looked_is_not_a_rollback(witnessed):
    """A worker starting while another appends: it read the newest index before the other's commit and its
    marker; the store then holds the next position, which the database has too."""
    newest = LogLeaf.objects.order_by("-index").first()
    store_witness.check_position(newest.index)  # the marker exists, and so does the leaf: nothing raised
    assert not Alert.objects.filter(kind="ledger_rollback").exists() and SubmissionSwitch.submissions_open()


def test_a_split_during_a_rollback_is_refused_on_the_review_page(witnessed, admin_client):
    lost = lose_the_newest_append()
    manifest = Manifest.objects.order_by("sequence").first()
    response = admin_client.post(reverse("review-manifest", args=[manifest.pk]), {"cases": "claim A: 1-1"})
    assert response.status_code == 200
    assert f"already holds log position {lost.log_leaf.index}" in response.content.decode()
    assert not CaseMap.objects.exists()
    assert Alert.objects.filter(kind="ledger_rollback", status=Alert.Status.OPEN).exists()
    assert not SubmissionSwitch.submissions_open()


def test_an_operator_re_imports_the_lost_positions_checked_and_the_ledger_grows_again(witnessed, tmp_path):
    log_checkpoints.write_log_checkpoint()  # witnesses hold a head over the position about to be lost
    lost = lose_the_newest_append()
    position = LogLeaf.objects.count()
    checked = ledger_recovery.recover("ops")  # a dry run: checked, listed, nothing written
    assert [(p["leaf_index"], p["kind"], p["signature_checked"]) for p in checked] == [(position, "manifest", True)]
    assert checked[0]["checkpoints"] and not RecoveredRecord.objects.exists()
    ledger_recovery.recover("ops", apply=True)
    leaf = LogLeaf.objects.get(index=position)
    assert (leaf.kind, leaf.leaf_hash, leaf.recovered.body) == ("recovered", lost.log_leaf.leaf_hash, lost.body)
    assert store_witness.check_at_start() == {"ledger": "in_step", "size": position + 1}
    set_submissions(True, by="ops", reason="recovered")
    with open(pdfs.flate_gray(tmp_path), "rb") as fh:
        job_id = submit_bundle(fh, filename="next.pdf", submitted_by="t").job_id
    run_job(job_id)
    assert Job.objects.get(pk=job_id).status == Job.Status.COMPLETED
    assert Manifest.objects.get(job_id=job_id).log_leaf.index > position  # the lost position was not signed again
    found = {f.kind for f in verify_all()[0]}
    assert not found & {"ledger_rollback", "log_mismatch", "log_checkpoint_invalid", "unexpected_output"}, found


@pytest.mark.parametrize("tamper", ["manifest file", "marker signature"])
def test_a_lost_record_that_does_not_check_out_is_not_re_imported(witnessed, tamper):
    lost = lose_the_newest_append()
    marker_name = store_witness.marker_name(lost.log_leaf.index)
    if tamper == "manifest file":
        write_stored("outputs", lost.storage_name, lost.body.replace('"warnings":[]', '"warnings":["x"]').encode())
    else:
        marker = json.loads(read_stored("outputs", marker_name))
        write_stored("outputs", marker_name, json.dumps({**marker, "signature": "00" * 64}).encode())
    with pytest.raises(ledger_recovery.RecoveryRefused):
        ledger_recovery.recover("ops", apply=True)
    assert not RecoveredRecord.objects.exists()


def test_a_restored_database_signing_a_stored_checkpoint_again_keeps_the_stored_note(witnessed):
    signed = log_checkpoints.write_log_checkpoint()
    LogCheckpoint.objects.all().delete()  # restored from a dump taken before the checkpoint was recorded

    again = log_checkpoints.write_log_checkpoint()

    assert (again.tree_size, again.note) == (signed.tree_size, signed.note)
    assert read_stored("outputs", again.storage_name) == signed.note.encode()
    assert not Alert.objects.filter(kind=store_witness.KIND).exists()


def test_a_stored_checkpoint_of_another_head_at_the_same_size_stops_signing_and_intake(witnessed):
    size = LogLeaf.objects.count()
    other = notes.checkpoint_text(settings.PAGETRAIL_LOG_ORIGIN, size, bytes(32))  # a history this database lacks
    write_stored(
        "outputs",
        log_checkpoints.storage_name(size),
        notes.sign(other, settings.PAGETRAIL_LOG_ORIGIN, signing.private_key()).encode(),
    )

    with pytest.raises(CommandError, match="another root hash"):
        call_command("log_checkpoint")

    assert not LogCheckpoint.objects.filter(tree_size=size).exists()
    assert Alert.objects.filter(kind=store_witness.KIND).exists()
    assert not SubmissionSwitch.submissions_open()
