"""Every action says what it did, and values read as a person would write them."""

import pytest
from django.db.models.signals import post_save
from django.urls import reverse

from audit.models import ActivityEvent, Manifest, RetentionPolicy, ReviewFlag
from audit.review import flags as review
from audit.review.flags import raise_flag
from extraction.intake.staging import submit_bundle
from extraction.runner import run_job
from tests import pdfs
from tests.conftest import approved_policy

pytestmark = pytest.mark.django_db


@pytest.fixture
def manifest(three_page_manifest) -> Manifest:
    return three_page_manifest


def messages_after(admin_client, changelist: str, action: str, selected, **form) -> list[str]:
    response = admin_client.post(
        reverse(f"admin:audit_{changelist}_changelist"),
        {"action": action, "_selected_action": selected, **form},
        follow=True,
    )
    return [str(m) for m in response.context["messages"]]


def test_requesting_a_re_extraction_says_which_job_was_queued(admin_client, manifest):
    flag = raise_flag(manifest, [2], "missing_image", "", "rita")
    said = messages_after(admin_client, "reviewflag", "request_reextraction", [flag.pk])
    flag.refresh_from_db()
    assert said == [f"Re-extraction queued for 1 flag(s): job {flag.reextraction_job_id}."]


def test_requesting_it_again_says_nothing_was_open(admin_client, manifest):
    flag = raise_flag(manifest, [2], "missing_image", "", "rita")
    messages_after(admin_client, "reviewflag", "request_reextraction", [flag.pk])
    said = messages_after(admin_client, "reviewflag", "request_reextraction", [flag.pk])
    assert said == ["No re-extraction requested: 1 selected flag(s) were not open."]


def test_placing_a_legal_hold_says_it_is_in_force(admin_client):
    policy = approved_policy()
    said = messages_after(admin_client, "retentionpolicy", "place_legal_hold", [policy.pk], post="yes", reason="x")
    held = RetentionPolicy.objects.order_by("-version").first()
    assert said == [
        f"{held} is in force: deletions under claims stop now. Another person with the approve permission confirms it."
    ]


def test_a_saved_version_offers_a_new_version_filled_in_from_it(admin_client):
    policy = approved_policy(input_days=30, contract_owner="Claims Ltd")
    page = admin_client.get(reverse("admin:audit_retentionpolicy_change", args=[policy.pk])).content.decode()
    url = reverse("admin:audit_retentionpolicy_add")
    assert f'href="{url}?name=claims&amp;input_days=30' in page and ">New version</a>" in page
    form = admin_client.get(f"{url}?name=claims&input_days=30&contract_owner=Claims+Ltd").content.decode()
    assert 'value="30"' in form and 'value="Claims Ltd"' in form


def test_the_activity_record_reads_as_words_not_a_python_dict(admin_client, manifest):
    flag = raise_flag(manifest, [1, 2, 3], "missing_page", "torn", "rita")
    page = admin_client.get(reverse("admin:audit_reviewflag_change", args=[flag.pk])).content.decode()
    # (PostgreSQL's jsonb keeps keys in an order of its own, so each part is looked for by itself.)
    parts = ("pages: 1-3", "kind: missing_page", "note: torn")
    assert all(part in page for part in parts) and "{&#x27;" not in page
    event = ActivityEvent.objects.get(action="flag_raised")
    listing = admin_client.get(reverse("admin:audit_activityevent_changelist")).content.decode()
    assert all(part in listing for part in parts) and event.actor in listing and "{&#x27;" not in listing


def test_a_flag_shows_its_pages_once_as_ranges(admin_client, manifest):
    flag = raise_flag(manifest, [1, 3], "missing_page", "torn", "rita")
    page = admin_client.get(reverse("admin:audit_reviewflag_change", args=[flag.pk])).content.decode()
    assert "1, 3" in page and "[1, 3]" not in page


def test_the_manifest_page_shows_the_body_indented_and_keeps_the_stored_bytes(admin_client, manifest):
    page = admin_client.get(reverse("admin:audit_manifest_change", args=[manifest.pk])).content.decode()
    assert '<pre id="manifest-body" style="max-height: 40em; overflow: auto">{\n  &quot;' in page
    stored = admin_client.get(reverse("download-manifest", args=[manifest.pk]))
    assert b"".join(stored.streaming_content) == manifest.body.encode()


def test_the_manifests_list_filters_those_that_need_review_and_counts_their_open_flags(
    admin_client, manifest, tmp_path
):
    with open(pdfs.mixed(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, filename="clean.pdf", submitted_by="t").job_id)
    raise_flag(manifest, [2], "missing_image", "", "rita")
    url = reverse("admin:audit_manifest_changelist")
    needs = admin_client.get(url + "?review=needs").content.decode()
    assert "three.pdf" in needs and "clean.pdf" not in needs and '<td class="field-open_flags">1</td>' in needs
    clear = admin_client.get(url + "?review=clear").content.decode()
    assert "clean.pdf" in clear and "three.pdf" not in clear


def test_a_flag_another_reviewer_wins_meanwhile_is_left_out_of_what_was_queued(admin_client, manifest):
    first = raise_flag(manifest, [1], "missing_image", "", "rita")
    second = raise_flag(manifest, [2], "missing_image", "", "rita")
    sams = []  # the flag Sam requested

    def sam_requests_the_other_flag(sender, instance, created, **kwargs):
        # Sam's request lands while the action is between the two flags it loaded as open.
        if instance.action == "reextraction_requested" and not sams:
            sams.append(second.pk if instance.object_id == str(first.pk) else first.pk)
            review.request_reextraction(ReviewFlag.objects.get(pk=sams[0]), "sam")

    post_save.connect(sam_requests_the_other_flag, sender=ActivityEvent)
    try:
        said = messages_after(admin_client, "reviewflag", "request_reextraction", [first.pk, second.pk])
    finally:
        post_save.disconnect(sam_requests_the_other_flag, sender=ActivityEvent)

    ours = ReviewFlag.objects.exclude(pk=sams[0]).get(pk__in=[first.pk, second.pk])
    assert said == [f"Re-extraction queued for 1 flag(s): job {ours.reextraction_job_id}."]
