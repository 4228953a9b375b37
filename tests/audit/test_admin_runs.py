from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.signing import SignedPackage

from audit import tasks
from audit.models import ActivityEvent, Asset, VerificationRun
from audit.verification.queued_runs import lease
from audit.verification.verify import execute, start_run
from extraction.reconciler import reconcile
from tests.conftest import lose_the_queue, queued_tasks, write_stored

pytestmark = pytest.mark.django_db


def test_it_starts_a_run_in_the_background_from_the_admin(admin_client, completed, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("admin:audit_verificationrun_start"))
    run = VerificationRun.objects.get()
    assert response["Location"] == reverse("admin:audit_verificationrun_change", args=[run.pk])
    assert (run.status, run.started_by, queued_tasks()) == ("queued", "admin", 1)


def test_it_reports_progress_as_json_for_the_page_to_poll(admin_client, completed):
    run = execute(start_run("admin").pk)
    progress = admin_client.get(reverse("admin:audit_verificationrun_progress", args=[run.pk])).json()
    assert progress["status"] == "passed" and progress["percent"] == 100
    assert progress["assets_done"] == progress["assets_total"] == 6
    page = admin_client.get(reverse("admin:audit_verificationrun_change", args=[run.pk])).content.decode()
    assert 'id="run-progress"' in page and "6 of 6 assets" in page


def test_it_lists_findings_by_kind_linked_to_their_manifest(admin_client, completed):
    write_stored("outputs", Asset.objects.first().name, b"tampered")
    run = execute(start_run("admin").pk)
    url = reverse("admin:audit_finding_changelist") + f"?kind__exact=hash_mismatch&run__id__exact={run.pk}"
    page = admin_client.get(url).content.decode()
    manifest = Asset.objects.first().manifest
    assert "hash_mismatch" in page and reverse("admin:audit_manifest_change", args=[manifest.pk]) in page


def test_staff_without_the_permission_cannot_start_a_run(client, completed):
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="view_verificationrun"))
    client.force_login(user)
    assert client.post(reverse("admin:audit_verificationrun_start")).status_code == 403
    assert "start-verification" not in client.get(reverse("admin:audit_verificationrun_changelist")).content.decode()
    assert not VerificationRun.objects.exists()


def test_the_manifest_action_starts_one_run_per_bundle(admin_client, completed, django_capture_on_commit_callbacks):
    from audit.models import Manifest

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            reverse("admin:audit_manifest_changelist"),
            {"action": "verify_selected", "_selected_action": list(Manifest.objects.values_list("pk", flat=True))},
        )
    run = VerificationRun.objects.get()
    assert run.scope_bundle_id is not None and queued_tasks() == 1


def test_a_run_whose_queued_task_was_lost_is_woken_by_the_reconciler_and_runs(
    admin_client, completed, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(reverse("admin:audit_verificationrun_start"))
    run = VerificationRun.objects.get()
    lose_the_queue()
    later = run.last_woken_at + timedelta(seconds=settings.PAGETRAIL_REQUEUE_AFTER_SECONDS + 1)
    assert reconcile()["verification_runs_woken"] == 0  # its task may still be waiting its turn

    assert [reconcile(at=later)["verification_runs_woken"] for _ in range(2)] == [1, 0]  # once, however many pass
    assert run_queued_verifications() == 1
    assert VerificationRun.objects.get().status == "passed"


def run_queued_verifications() -> int:
    broker, ran = get_broker(), 0
    while batch := broker.dequeue():
        for ack_id, payload in batch:
            task = SignedPackage.loads(payload)
            if task["func"] == "audit.tasks.run_verification":
                tasks.run_verification(*task["args"])
                ran += 1
            broker.acknowledge(ack_id)
    return ran


def started_and_abandoned() -> VerificationRun:
    """A run a worker took and died in (SIGKILL, a host gone): `running`, its task gone from the queue."""
    run = start_run("alice")
    assert run.mark_running()
    lose_the_queue()
    run.refresh_from_db()
    return run


def past_its_lease(run: VerificationRun):
    return run.started_at + lease() + timedelta(seconds=1)


def test_a_run_whose_worker_died_is_queued_again_after_its_lease_and_runs(completed):
    run = started_and_abandoned()
    assert reconcile()["verification_runs_abandoned"] == 0  # its worker may still be at it

    later = past_its_lease(run)
    assert [reconcile(at=later)["verification_runs_abandoned"] for _ in range(2)] == [1, 0]
    assert run_queued_verifications() == 1
    run.refresh_from_db()
    assert (run.status, run.tries) == ("passed", 2)


def test_a_run_whose_worker_died_on_its_last_try_is_an_error_that_says_why(completed):
    run = started_and_abandoned()
    reconcile(at=past_its_lease(run))
    run = VerificationRun.objects.get()
    assert run.mark_running()  # its second worker died too
    lose_the_queue()
    run.refresh_from_db()

    assert reconcile(at=past_its_lease(run))["verification_runs_abandoned"] == 1
    run.refresh_from_db()
    assert (run.status, run.tries, run.findings.count()) == ("error", 2, 0)
    assert run.error.startswith("Its worker stopped (killed, its host gone, or the run took longer than the task")
    assert queued_tasks() == 0


def test_a_run_that_keeps_progressing_is_not_taken_for_abandoned_however_long_it_runs(completed):
    run = started_and_abandoned()
    long_after = past_its_lease(run) + timedelta(hours=1)  # a foreground `verify_manifests` on a large deployment
    VerificationRun.objects.filter(pk=run.pk).update(progress_at=long_after - timedelta(seconds=5))
    assert reconcile(at=long_after)["verification_runs_abandoned"] == 0

    silent_since = long_after - lease() - timedelta(seconds=1)
    VerificationRun.objects.filter(pk=run.pk).update(progress_at=silent_since)
    assert reconcile(at=long_after)["verification_runs_abandoned"] == 1
    assert VerificationRun.objects.get().status == "queued"


def test_a_try_whose_run_was_taken_over_records_nothing_and_the_command_says_so(completed, monkeypatch):
    from audit.verification import verify

    write_stored("outputs", Asset.objects.first().name, b"tampered")
    check_asset, taken_over = verify.check_asset, []

    def check_asset_while_the_reconciler_takes_the_run_over(asset):
        if not taken_over:  # the command's try went quiet: the reconciler requeues it and a worker runs it
            taken_over.append(True)
            assert reconcile(at=timezone.now() + lease() + timedelta(minutes=1))["verification_runs_abandoned"] == 1
            assert run_queued_verifications() == 1
        return check_asset(asset)

    monkeypatch.setattr(verify, "check_asset", check_asset_while_the_reconciler_takes_the_run_over)
    with pytest.raises(CommandError, match="taken over by a cluster worker"):
        call_command("verify_manifests")

    run = VerificationRun.objects.get()
    assert (run.status, run.tries, run.findings_count, run.findings.count()) == ("failed", 2, 1, 1)
    assert ActivityEvent.objects.filter(action="verification_finished").count() == 1


def test_a_try_whose_run_was_started_again_cannot_record_progress_nor_finish(completed):
    old_try = started_and_abandoned()
    reconcile(at=past_its_lease(old_try))
    new_try = VerificationRun.objects.get()
    assert new_try.mark_running()

    assert not old_try.record_progress(assets_done=99)
    assert not old_try.mark_finished(3)
    assert (VerificationRun.objects.get().status, VerificationRun.objects.get().assets_done) == ("running", 0)
