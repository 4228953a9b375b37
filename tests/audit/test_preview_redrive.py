"""Page previews whose queued task was lost (a flushed Redis, a deleted ORM queue row, a task failed on a dropped
connection) are asked for again by the reconciler, and the review page says what is true meanwhile."""

import importlib
import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from audit import tasks
from audit.models import PreviewRequest
from audit.review import preview_requests
from core import display, processes, stored_inputs
from extraction.pdf import SandboxError
from extraction.reconciler import reconcile
from tests import pdfs
from tests.conftest import PRODUCTION, complete
from tests.procs import Portal

pytestmark = pytest.mark.django_db


def written(path, capture) -> "PreviewRequest":
    """A completed job's manifest, its previews' task queued as the completion transaction commits."""
    with capture(execute=True):
        manifest = complete(path)
    return PreviewRequest.objects.get(pk=manifest.pk)


def lose_the_previews_queue() -> None:
    """What an operator met: Redis FLUSHDB of the queue's db, or (embedded profile) the ORM queue's rows gone."""
    if PRODUCTION:
        import redis

        redis.from_url(settings.REDIS_URL).flushdb()
    else:
        OrmQ.objects.all().delete()
    assert get_broker(settings.PAGETRAIL_PREVIEW_QUEUE).queue_size() == 0


def run_preview_tasks() -> list[dict]:
    """Run what the previews queue holds in this process, as its worker would; returns what the previews' tasks
    returned (the page hints' tasks share the queue)."""
    broker, results = get_broker(settings.PAGETRAIL_PREVIEW_QUEUE), []
    while batch := broker.dequeue():
        for ack_id, payload in batch:
            task = SignedPackage.loads(payload)
            assert task["func"] in ("audit.tasks.generate_previews", "audit.tasks.find_page_hints"), task["func"]
            if task["func"] == "audit.tasks.generate_previews":
                results.append(tasks.generate_previews(*task["args"]))
            else:
                tasks.find_page_hints(*task["args"])
            broker.acknowledge(ack_id)
    return results


def overdue_moment(request: PreviewRequest):
    return request.progress_at + timedelta(minutes=settings.PAGETRAIL_PREVIEWS_OVERDUE_MINUTES, seconds=1)


def previews_text(client, manifest_id: int) -> str:
    return client.get(reverse("review-previews", args=[manifest_id])).json()["text"]["previewed"]


def test_it_asks_for_previews_in_the_manifests_own_transaction(tmp_path, django_capture_on_commit_callbacks):
    request = written(pdfs.reused_on_three_pages(tmp_path), django_capture_on_commit_callbacks)
    assert (request.outcome, request.times_asked, request.finished_at) == ("", 1, None)
    assert get_broker(settings.PAGETRAIL_PREVIEW_QUEUE).queue_size() == 2  # and its page hints


def test_the_reconciler_re_drives_previews_whose_queued_task_was_lost_to_completion(
    tmp_path, django_capture_on_commit_callbacks, caplog
):
    request = written(pdfs.reused_on_three_pages(tmp_path), django_capture_on_commit_callbacks)
    lose_the_previews_queue()
    assert reconcile()["previews_redriven"] == 0  # not overdue yet: its task may still be waiting its turn

    assert reconcile(at=overdue_moment(request))["previews_redriven"] == 1
    assert f"re-drove previews of manifest {request.pk}" in caplog.text
    assert run_preview_tasks() == [{"rendered": 6}]
    request.refresh_from_db()
    assert (request.outcome, request.times_asked, request.manifest.previews.count()) == ("done", 2, 6)
    assert reconcile(at=overdue_moment(request) + timedelta(hours=1))["previews_redriven"] == 0  # done: never again


def test_two_reconcilers_racing_over_the_same_overdue_request_ask_once(tmp_path, django_capture_on_commit_callbacks):
    request = written(pdfs.reused_on_three_pages(tmp_path), django_capture_on_commit_callbacks)
    lose_the_previews_queue()
    at = overdue_moment(request)
    [(manifest_id, seen)] = preview_requests.overdue(at).values_list("pk", "progress_at")  # both read this

    assert [preview_requests.ask_again(manifest_id, seen, at) for _ in range(2)] == [True, False]
    assert preview_requests.redrive(lambda pk: None, at) == 0
    assert PreviewRequest.objects.get(pk=manifest_id).times_asked == 2


def test_a_task_in_progress_is_not_overdue_while_it_stores_batches(tmp_path, django_capture_on_commit_callbacks):
    request = written(pdfs.reused_on_three_pages(tmp_path), django_capture_on_commit_callbacks)
    later = overdue_moment(request)
    preview_requests.progressed(request.pk, at=later)  # a worker stored a batch just now
    assert reconcile(at=later)["previews_redriven"] == 0


def test_the_review_page_says_previews_are_overdue_then_when_they_were_asked_for_again(
    admin_client, tmp_path, django_capture_on_commit_callbacks
):
    request = written(pdfs.reused_on_three_pages(tmp_path), django_capture_on_commit_callbacks)
    assert previews_text(admin_client, request.pk) == "0 of 3 pages have a preview, more are being made"
    lose_the_previews_queue()
    PreviewRequest.objects.filter(pk=request.pk).update(progress_at=timezone.now() - timedelta(hours=1))

    overdue = previews_text(admin_client, request.pk)
    assert overdue.startswith("0 of 3 pages have a preview; previews are overdue (no progress since ")
    assert "more are being made" not in overdue
    page = admin_client.get(reverse("review-manifest", args=[request.pk])).content.decode()
    assert "Preview being made" not in page and page.count("No preview yet (see above).") == 3

    reconcile()
    asked = PreviewRequest.objects.get(pk=request.pk).asked_at
    assert previews_text(admin_client, request.pk) == (
        f"0 of 3 pages have a preview; previews were overdue and were asked for again at {display.timestamp(asked)}"
    )
    run_preview_tasks()
    assert previews_text(admin_client, request.pk) == "3 of 3 pages have a preview"


def test_the_review_page_says_why_previews_could_not_be_made_and_stops_polling(
    admin_client, tmp_path, settings, django_capture_on_commit_callbacks
):
    from tests.audit.test_previews import costly_to_render

    request = written(costly_to_render(tmp_path), django_capture_on_commit_callbacks)
    settings.PAGETRAIL_CHILD_CPU_SECONDS = 1
    assert run_preview_tasks() == [{"rendered": 0, "error": "resource_limit"}]

    state = admin_client.get(reverse("review-previews", args=[request.pk])).json()
    assert state["final"] and state["text"]["previewed"].startswith("0 of 1 pages have a preview; previews could not")
    assert PreviewRequest.objects.get(pk=request.pk).error_code == "resource_limit"
    assert reconcile(at=overdue_moment(request) + timedelta(hours=1))["previews_redriven"] == 0


@pytest.mark.slow
@pytest.mark.skipif(PRODUCTION, reason="an embedded-profile deployment with real worker processes")
def test_a_deployment_whose_previews_queue_row_was_deleted_gets_its_previews_after_reconcile(tmp_path):
    p = Portal(tmp_path / "portal")
    p.manage("migrate", "--noinput")
    try:
        [submitted] = p.manage_json("submit_bundle", "--here", pdfs.reused_on_three_pages(tmp_path))
        p.start_worker()
        p.wait_for("select status = 'completed' from extraction_job where id = ?", submitted["job_id"])
        p.wait_for("select count(*) = 2 from django_q_ormq where key = 'pagetrail-previews'")  # previews, page hints
        p.query("delete from django_q_ormq")  # the lost tasks
        p.start_worker(queue="pagetrail-previews")

        # At once rather than after PAGETRAIL_PREVIEWS_OVERDUE_MINUTES (the workers' own reconciler waits those 10).
        at_once = processes.manage({**p.env, "PAGETRAIL_PREVIEWS_OVERDUE_MINUTES": "0"}, "reconcile")
        assert json.loads(at_once.stdout)["previews_redriven"] == 1
        assert json.loads(at_once.stdout)["page_hints_redriven"] == 1

        p.wait_for("select outcome = 'done' from audit_previewrequest")
        assert p.query("select count(*), max(times_asked) from audit_previewrequest")[0] == (1, 2)
        assert p.query("select count(*) from audit_pagepreview")[0][0] == 6
    finally:
        p.stop()


def test_the_migration_asks_again_for_previews_missing_from_manifests_written_before_it(
    tmp_path, settings, django_capture_on_commit_callbacks
):
    from django.apps import apps

    from tests.audit.test_previews import costly_to_render

    made = written(pdfs.reused_on_three_pages(tmp_path), django_capture_on_commit_callbacks)
    lost = written(pdfs.jpeg_rgb(tmp_path), django_capture_on_commit_callbacks)
    failed = written(costly_to_render(tmp_path), django_capture_on_commit_callbacks)
    settings.PAGETRAIL_CHILD_CPU_SECONDS = 1
    tasks.generate_previews(made.pk), tasks.generate_previews(failed.pk)
    PreviewRequest.objects.all().delete()  # as before the migration
    migration = importlib.import_module("audit.migrations.0028_preview_requests")

    migration.request_missing_previews(apps, None)

    rows = {r.pk: (r.outcome, r.error_code) for r in PreviewRequest.objects.all()}
    assert rows == {lost.pk: ("", ""), failed.pk: ("failed", "resource_limit")}
    # pending since its manifest was written: asked for again once overdue from then
    assert reconcile(at=overdue_moment(PreviewRequest.objects.get(pk=lost.pk)))["previews_redriven"] == 1
    assert PreviewRequest.objects.get(pk=lost.pk).progress_at > lost.manifest.created_at


@pytest.mark.parametrize(
    "failure, recorded",
    [
        (stored_inputs.InputChanged("hashes to something else"), ("input_changed", "hashes to something else")),
        (stored_inputs.InputMissing("gone from the store"), ("input_missing", "gone from the store")),
        (SandboxError("resource_limit", "over its CPU time", permanent=True), ("resource_limit", "over its CPU time")),
    ],
)
def test_previews_and_page_hints_record_a_failure_another_try_would_repeat(failure, recorded):
    assert isinstance(failure, preview_requests.FINAL)
    assert preview_requests.final_failure(failure) == recorded


def test_a_sandbox_failure_of_this_machine_goes_back_to_the_queue():
    with pytest.raises(SandboxError, match="child_crashed"):
        preview_requests.final_failure(SandboxError("child_crashed", "the child died", permanent=False))
