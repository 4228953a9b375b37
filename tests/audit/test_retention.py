import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from audit.models import ActivityEvent, Asset, Manifest, RetentionAssignment, RetentionEvent, RetentionPolicy
from audit.retention import enforcement as retention
from audit.verification.verify import verify_all
from extraction.intake.staging import submit_bundle
from extraction.models import Bundle
from tests import pdfs
from tests.conftest import approved_policy, stored_names

pytestmark = pytest.mark.django_db
LATER = timedelta(days=400)


def policy(**fields):
    values = dict(
        is_default=True,
        input_days=30,
        output_days=365,
        manifest_days=None,
        legal_hold=False,
        contract_owner="Claims Ltd",
        decision_note="Contract 12, clause 7",
    )
    return approved_policy("claims", "retention-admin", **{**values, **fields})


@pytest.fixture
def completed(completed):
    """The bundle of the shared completed job (tests/conftest.py)."""
    return Bundle.objects.get()


def test_a_change_makes_a_new_version_and_keeps_the_old_one():
    first = policy()
    second = policy(input_days=7)
    assert (first.version, second.version, second.output_days) == (1, 2, 365)
    assert RetentionPolicy.objects.count() == 2 and RetentionPolicy.objects.get(version=1).input_days == 30


def test_every_policy_change_is_in_the_activity_record():
    policy()
    policy(input_days=7)
    event = ActivityEvent.objects.filter(action="retention_policy_drafted").first()
    assert event.actor == "retention-admin"
    assert event.before["input_days"] == "30" and event.after["input_days"] == "7"


def test_a_bundle_keeps_the_version_in_force_when_it_was_assigned(completed):
    first = policy()
    retention.apply_retention(at=timezone.now())
    policy(input_days=1)
    assert RetentionAssignment.objects.get(bundle=completed).policy == first


def test_it_deletes_the_input_when_its_window_ends_and_records_it(completed):
    policy()
    assert retention.apply_retention(at=completed.created_at + timedelta(days=29)) == []
    [done] = retention.apply_retention(at=completed.created_at + timedelta(days=31))
    assert (done["what"], done["outcome"]) == ("input", "deleted")
    assert stored_names("inputs") == []
    completed.refresh_from_db()
    assert completed.input_deleted_at is not None
    event = RetentionEvent.objects.get()
    assert (event.what, event.bytes_freed, event.policy.version) == ("input", completed.size, 1)


def test_outputs_go_when_their_window_ends_and_the_manifest_survives(completed):
    policy()
    retention.apply_retention(at=timezone.now() + LATER)
    manifest = Manifest.objects.get()
    assert stored_names("outputs") == [manifest.storage_name]
    event = manifest.retention_events.get(what="outputs")
    assert event.files == 6 and event.bytes_freed == sum(Asset.objects.values_list("size", flat=True))
    assert verify_all()[0] == []  # deleted under policy is not "missing"


def test_a_deletion_from_a_store_without_versions_signs_that_the_files_are_removed(completed):
    policy()
    [done] = retention.apply_retention(at=completed.created_at + timedelta(days=31))
    assert done["deletion"] == "removed"
    assert json.loads(RetentionEvent.objects.get().body)["deletion"] == "removed"


def test_a_legal_hold_survives_a_retention_run_and_the_block_is_recorded_once(completed):
    policy()
    retention.set_legal_hold("claims", True, "counsel", "Litigation 2026-17")
    retention.apply_retention(at=timezone.now() + LATER)
    retention.apply_retention(at=timezone.now() + LATER + timedelta(days=1))
    assert len(stored_names("inputs")) == 1 and len(stored_names("outputs")) == 7
    blocks = RetentionEvent.objects.filter(outcome="blocked_by_legal_hold")
    assert sorted(blocks.values_list("what", flat=True)) == ["input", "outputs"]


def test_a_hold_placed_stops_deletions_at_once_without_a_second_person(completed):
    policy()
    held = retention.set_legal_hold("claims", True, "counsel", "Litigation 2026-17")
    assert (held.status, held.created_by, held.approved_by) == ("hold_placed", "counsel", "")
    assert retention.apply_retention(at=timezone.now() + LATER)[0]["outcome"] == "blocked_by_legal_hold"


def test_lifting_the_hold_waits_for_a_second_person(completed):
    policy()
    retention.set_legal_hold("claims", True, "counsel", "hold")
    retention.set_legal_hold("claims", False, "counsel", "case closed")
    retention.apply_retention(at=timezone.now() + LATER)
    assert len(stored_names("inputs")) == 1


def test_lifting_the_hold_once_approved_lets_the_next_run_delete(completed):
    policy()
    retention.set_legal_hold("claims", True, "counsel", "hold")
    approved_policy("claims", "counsel", legal_hold=False, decision_note="case closed")
    retention.apply_retention(at=timezone.now() + LATER)
    assert stored_names("inputs") == []


def test_a_dry_run_deletes_nothing(completed, capsys):
    policy()
    retention.apply_retention(at=timezone.now() + LATER, dry_run=True)
    call_command("apply_retention", "--dry-run")
    assert len(stored_names("inputs")) == 1 and not RetentionEvent.objects.exists()


def test_a_dry_run_pins_no_bundle_to_a_version(completed):
    policy()
    retention.apply_retention(at=timezone.now() + LATER, dry_run=True)
    assert not RetentionAssignment.objects.exists()


def test_a_dry_run_counts_the_files_it_would_delete(completed):
    policy()
    entries = retention.apply_retention(at=timezone.now() + LATER, dry_run=True)
    assert {e["what"]: e["files"] for e in entries} == {"input": 1, "outputs": 6}


def test_nothing_is_deleted_while_a_job_is_active(tmp_path):
    policy()
    with open(pdfs.jpeg_rgb(tmp_path), "rb") as fh:
        submit_bundle(fh, filename="x.pdf", submitted_by="t")
    assert retention.apply_retention(at=timezone.now() + LATER) == []


def test_verification_finds_an_input_kept_past_its_window(completed):
    policy(input_days=30)
    RetentionAssignment.objects.create(bundle=completed, policy=RetentionPolicy.objects.get())
    Bundle.objects.filter(pk=completed.pk).update(created_at=timezone.now() - timedelta(days=31))
    assert [f.kind for f in verify_all()[0]] == ["input_past_retention"]


def test_the_activity_record_finds_an_edited_event():
    policy()
    policy(input_days=7)
    assert ActivityEvent.broken_links() == []
    ActivityEvent.objects.filter(pk=ActivityEvent.objects.order_by("pk").first().pk).update(actor="someone else")
    assert ActivityEvent.broken_links() == [ActivityEvent.objects.order_by("pk").first().pk]


def test_the_upgrade_signs_events_recorded_before_signing_and_widens_key_periods(completed):
    import importlib

    from django.apps import apps

    from audit.models import ActivityEvent, SigningKey
    from tests.audit.chained import make_chained
    from tests.audit.test_verify import kinds

    make_chained(Manifest.objects.all())  # a manifest as written before the ledger: the first of a hash chain
    policy(input_days=1, output_days=1)
    retention.apply_retention(at=timezone.now() + timedelta(days=2))
    with connection.cursor() as cursor:  # as recorded before the ledger (0015) held anything
        cursor.execute("DELETE FROM audit_logleaf")
        cursor.execute("DELETE FROM audit_logsubtree")
    unsigned = {"body": "", "signature": "", "key_id": "", "mldsa_signature": "", "mldsa_key_id": ""}
    RetentionEvent.objects.update(**unsigned)  # as recorded before events were signed
    ActivityEvent.objects.update(**unsigned)  # and activity (0021)
    SigningKey.objects.update(valid_from=timezone.now())  # published at the first signature, after its statement
    assert set(kinds()) == {
        "activity_invalid",  # not signed yet
        "bad_signature",
        "log_mismatch",  # the records are not in the ledger yet
        "missing_input",
        "missing_output",
        "retention_event_invalid",
    }
    with connection.cursor() as cursor:  # the run's own activity event took leaf 0: it too predates the ledger
        cursor.execute("DELETE FROM audit_logleaf")
        cursor.execute("DELETE FROM audit_logsubtree")
    ActivityEvent.objects.update(mldsa_signature="", mldsa_key_id="")  # 0021 ran before ML-DSA-44 (0035)
    upgrade = importlib.import_module("audit.migrations.0014_signed_retention_events")
    upgrade.periods_covering_what_each_key_signed(apps, None)
    upgrade.sign_events_recorded_before_signing(apps, None)
    importlib.import_module("audit.migrations.0015_transparency_log").log_every_manifest_so_far(apps, None)
    importlib.import_module("audit.migrations.0019_ledger_retention_events").log_every_retention_event_so_far(
        apps, None
    )
    importlib.import_module("audit.migrations.0021_ledger_activity").sign_and_log_every_event_so_far(apps, None)
    importlib.import_module("audit.migrations.0023_ledger_subtrees").store_the_subtrees_of_every_leaf_so_far(apps, None)
    assert kinds() == []
    assert all('"signed_at_upgrade":true' in e.body for e in RetentionEvent.objects.all())
