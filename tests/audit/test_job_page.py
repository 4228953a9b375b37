"""The job page tells the story: state with its reason, attempts with repeats collapsed, links to evidence."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django.utils import timezone

from audit.review import job_page
from extraction.intake.staging import submit_bundle
from extraction.kill_switch import set_submissions
from extraction.models import Attempt, Job
from extraction.runner import run_job
from tests import pdfs

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(tmp_path) -> Job:
    with open(pdfs.mixed(tmp_path), "rb") as fh:
        return Job.objects.get(
            pk=submit_bundle(fh, filename="claims-1042.pdf", submitted_by="t", case_label="claim 1042").job_id
        )


def test_it_says_a_queued_job_waits_for_the_kill_switch_and_who_closed_it(job):
    set_submissions(False, by="olga", reason="provider outage")
    assert job_page.reason(job, None).startswith("Waiting for the kill switch: submissions were stopped by olga at ")
    assert "provider outage" in job_page.reason(job, None)


def test_it_says_when_a_held_job_retries(job):
    Job.objects.filter(pk=job.pk).update(status="submitted", claimed_until=timezone.now() + timedelta(seconds=30))
    job.refresh_from_db()
    last = Attempt.begin(job, "poll", outcome="retry")
    assert job_page.reason(job, last).startswith("Retrying at ")
    assert "after poll retry" in job_page.reason(job, last)


def test_it_says_since_when_an_unknown_job_is_unknown(job):
    job.mark_unknown("deadline_passed", "The provider had not finished by the job's deadline.")
    assert job_page.reason(job, None).startswith(f"Unknown since {job.deadline:%Y-%m-%d %H:%M:%S}")


def test_it_collapses_repeated_polls_into_one_line(job):
    Attempt.begin(job, "submit", outcome="ok")
    for _ in range(5):
        Attempt.begin(job, "poll", outcome="retry")
    Attempt.begin(job, "poll", outcome="ok")
    lines = job_page.timeline(job.attempts.order_by("number"))
    assert [(line.kind, line.outcome, line.count, line.numbers) for line in lines] == [
        ("submit", "ok", 1, "1"),
        ("poll", "retry", 5, "2-6"),
        ("poll", "ok", 1, "7"),
    ]


def test_every_link_of_a_completed_jobs_page_opens(admin_client, job):
    run_job(job.pk)
    page = admin_client.get(reverse("admin:extraction_job_change", args=[job.pk])).content.decode()
    story = page[page.index('id="job-links"') : page.index('id="job-timeline"')]
    urls = re.findall(r'href="([^"]+)"', story)
    assert len(urls) == 7  # bundle, input download, manifest, review page, assets, flags, cases
    for url in urls:
        assert admin_client.get(url.replace("&amp;", "&")).status_code == 200, url


def test_it_keeps_the_claim_and_its_lease_off_the_job_page(admin_client, job):
    page = admin_client.get(reverse("admin:extraction_job_change", args=[job.pk])).content.decode()
    assert "Claim token" not in page and "Claimed until" not in page and "Last woken at" not in page


def test_the_job_page_lists_its_attempts_once(admin_client, job):
    run_job(job.pk)
    page = admin_client.get(reverse("admin:extraction_job_change", args=[job.pk])).content.decode()
    assert page.count("<th>attempts</th>") == 1 and 'id="attempts-group"' not in page and "attempt_set" not in page


def test_the_polled_state_is_final_once_the_job_is_completed(admin_client, job):
    url = reverse("admin:extraction_job_state", args=[job.pk])
    assert admin_client.get(url).json()["final"] is False
    run_job(job.pk)
    state = admin_client.get(url).json()
    assert (state["final"], state["text"]["status"], state["text"]["title"]) == (
        True,
        "completed",
        f"job {job.pk} (completed)",
    )
    assert f">manifest {Job.objects.get(pk=job.pk).manifest.sequence}</a>" in state["html"]["links"]


def test_the_input_download_link_shows_only_to_those_who_may_download(client, job):
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    seeing = ["view_bundle", "view_job", "view_all_bundles"]  # every bundle, not only their own (Submitters)
    viewer.user_permissions.set(Permission.objects.filter(codename__in=seeing))
    client.force_login(viewer)
    bundle_page = reverse("admin:extraction_bundle_change", args=[job.bundle_id])
    assert 'id="input-download"' not in client.get(bundle_page).content.decode()
    assert (
        "download the input PDF"
        not in client.get(reverse("admin:extraction_job_change", args=[job.pk])).content.decode()
    )
    viewer.user_permissions.add(Permission.objects.get(codename="download_input"))
    assert reverse("download-input", args=[job.bundle_id]) in client.get(bundle_page).content.decode()


def test_the_jobs_list_names_the_file_and_case_and_shortens_the_correlation_id(admin_client, job):
    page = admin_client.get(reverse("admin:extraction_job_changelist")).content.decode()
    assert "claims-1042.pdf" in page and "claim 1042" in page
    cid = job.bundle.correlation_id
    assert f'<code class="short-id" title="{cid}">{cid[:12]}</code>' in page
