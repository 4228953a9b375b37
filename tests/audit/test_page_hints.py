"""Page hints after the manifest: found by the previews queue's task, re-driven when lost, shown first on the review
page, and each confirmed (a flag) or dismissed by a reviewer, both recorded."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.urls import reverse

from audit import tasks
from audit.models import ActivityEvent, HintRun, PageHint, ReviewFlag
from audit.review import page_hints
from bench import review_corpus
from bench.review_corpus import Bundle, Sheet
from extraction.reconciler import reconcile
from tests import pdfs
from tests.conftest import complete, write_stored

pytestmark = pytest.mark.django_db


def gapped(directory):
    """Ten searchable scans, printed page 4 missing and printed page 7 fed twice."""
    sheets = [Sheet(n, 10) for n in range(1, 11)]
    del sheets[3]
    sheets.insert(6, Sheet(7, 10))
    return review_corpus.write_bundle(Bundle("gapped", sheets, searchable=True), directory / "gapped.pdf")


@pytest.fixture
def manifest(tmp_path, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return complete(gapped(tmp_path))


def review(client, manifest) -> str:
    return client.get(reverse("review-manifest", args=[manifest.pk])).content.decode()


def test_it_is_asked_with_the_manifest_and_found_afterwards_once(manifest, admin_client):
    run = HintRun.objects.get(pk=manifest.pk)
    assert (run.outcome, manifest.page_hints.count()) == ("", 0)  # the manifest read no page for them
    assert "being looked for by a worker" in review(admin_client, manifest)

    assert tasks.find_page_hints(manifest.pk) == {"hints": 2}
    assert tasks.find_page_hints(manifest.pk) == {"hints": 0}  # redelivered: nothing twice
    found = {(h.kind, tuple(h.pages)) for h in manifest.page_hints.all()}
    assert found == {("missing_page", (3, 4)), ("repeated_page", (6, 7))}
    assert HintRun.objects.get(pk=manifest.pk).numbering[:4] == ["1/10", "2/10", "3/10", "5/10"]


def test_suggestions_come_first_with_their_evidence_and_mark_their_pages_in_the_index(manifest, admin_client):
    tasks.find_page_hints(manifest.pk)
    page = review(admin_client, manifest)
    assert page.index('id="suggestions"') < page.index('id="page-index"') < page.index('id="flag-form"')
    assert "printed page 4 of 10 is missing between PDF pages 3 and 4" in page
    assert 'class="covered shown suggested"' in page


def test_a_confirmed_suggestion_becomes_a_flag_and_a_dismissed_one_is_recorded(manifest, admin_client):
    tasks.find_page_hints(manifest.pk)
    missing, repeated = manifest.page_hints.order_by("pk")
    url = reverse("review-manifest", args=[manifest.pk])

    response = admin_client.post(url, {"hint": missing.pk, "decision": "confirm"})
    assert response.status_code == 302 and response["Location"].endswith("#next-suggestion")
    flag = ReviewFlag.objects.get(manifest=manifest)
    assert (flag.kind, flag.pages, flag.raised_by) == ("missing_page", [3, 4], "admin")
    assert "printed page 4 of 10 is missing" in flag.note
    admin_client.post(url, {"hint": repeated.pk, "decision": "dismiss"})
    missing.refresh_from_db(), repeated.refresh_from_db()
    assert (missing.status, missing.flag, repeated.status, repeated.decided_by) == (
        "confirmed",
        flag,
        "dismissed",
        "admin",
    )
    actions = set(ActivityEvent.objects.values_list("action", flat=True))
    assert {"page_hint_confirmed", "flag_raised", "page_hint_dismissed"} <= actions

    again = admin_client.post(url, {"hint": missing.pk, "decision": "dismiss"}, follow=True).content.decode()
    assert "was already answered by admin" in again and PageHint.objects.get(pk=missing.pk).status == "confirmed"


def test_an_unknown_answer_changes_nothing_and_says_so(manifest, admin_client):
    tasks.find_page_hints(manifest.pk)
    hint = manifest.page_hints.first()
    url = reverse("review-manifest", args=[manifest.pk])
    page = admin_client.post(url, {"hint": hint.pk, "decision": "maybe"}, follow=True).content.decode()
    assert "Choose Confirm or Dismiss for a suggestion." in page
    assert PageHint.objects.get(pk=hint.pk).status == "suggested" and not manifest.review_flags.exists()
    assert admin_client.post(url, {"hint": "x", "decision": "confirm"}).status_code == 404


def test_the_reconciler_asks_again_for_hints_whose_task_was_lost(manifest):
    run = HintRun.objects.get(pk=manifest.pk)
    overdue = run.progress_at + timedelta(minutes=settings.PAGETRAIL_PREVIEWS_OVERDUE_MINUTES, seconds=1)
    assert reconcile(at=overdue)["page_hints_redriven"] == 1
    assert HintRun.objects.get(pk=manifest.pk).times_asked == 2


def test_an_input_whose_bytes_changed_gives_no_hints_and_records_why(manifest, tmp_path):
    write_stored("inputs", manifest.job.bundle.input_name, pdfs.mixed(tmp_path).read_bytes())
    assert tasks.find_page_hints(manifest.pk) == {"hints": 0, "error": "input_changed"}
    assert HintRun.objects.get(pk=manifest.pk).outcome == "failed" and not manifest.page_hints.exists()
    assert ActivityEvent.objects.filter(action="page_hints_failed").exists()


def test_a_bundle_without_hints_gets_none(tmp_path, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        manifest = complete(pdfs.reused_on_three_pages(tmp_path))
    assert page_hints.find_page_hints(manifest.pk) == {"hints": 0}
    assert HintRun.objects.get(pk=manifest.pk).outcome == "done"


def test_a_case_maps_ranges_are_read_against_the_printed_numbering(manifest, admin_client):
    from audit.review import cases

    tasks.find_page_hints(manifest.pk)
    cases.split(manifest, [("claim 1", 1, 3), ("claim 2", 4, 10)], "rita")
    page = review(admin_client, manifest)
    assert "(printed 1/10 to 3/10; ends before its document&#x27;s last page)" in page
    assert "(printed 5/10 to 10/10; starts after its document&#x27;s first page)" in page
