"""Every audit list found by the names people know (file name, case label, submitter, the start of a correlation
id), filtered by case label and dates, at the same number of queries for more rows."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from audit.models import Asset, Finding, Manifest, RetentionEvent, ReviewFlag, VerificationRun
from audit.retention import enforcement as retention
from audit.review import flags as review
from audit.verification import verify
from audit.verification.verify import verify_all
from extraction.intake.staging import submit_bundle
from extraction.runner import run_job
from extraction.search import MIN_PREFIX
from tests.conftest import approved_policy, read_stored, write_stored
from tests.extraction.test_admin import distinct_pdf, queries_for

pytestmark = pytest.mark.django_db


def completed(directory, number, filename, submitted_by, case_label="") -> Manifest:
    with open(distinct_pdf(directory, number), "rb") as fh:
        job_id = submit_bundle(fh, filename=filename, submitted_by=submitted_by, case_label=case_label).job_id
    run_job(job_id)
    return Manifest.objects.get(job_id=job_id)


def everything_about(manifest: Manifest) -> None:
    """A flag, a run scoped to its bundle, a finding (one flipped byte) and a retention event."""
    review.raise_flag(manifest, [1], ReviewFlag.Kind.MISSING_IMAGE, "", "reviewer")
    verify.start_run("auditor", bundle=manifest.job.bundle)
    asset = manifest.assets.order_by("pk").first()
    flipped = bytearray(read_stored("outputs", asset.name))
    flipped[len(flipped) // 2] ^= 1
    write_stored("outputs", asset.name, bytes(flipped))


@pytest.fixture
def two_manifests(tmp_path):
    claim = completed(tmp_path, 1, "scan-0007.pdf", "alice", case_label="claim-1042")
    paper = completed(tmp_path, 2, "tracemonkey.pdf", "bob")
    for manifest in (claim, paper):
        everything_about(manifest)
    verify_all()
    approved_policy("claims", is_default=True, input_days=0, output_days=None, manifest_days=None)
    retention.apply_retention(at=timezone.now() + timedelta(days=1))
    return claim, paper


ROWS = {
    "manifest": lambda m: {m},
    "asset": lambda m: set(Asset.objects.filter(manifest=m)),
    "finding": lambda m: set(Finding.objects.filter(manifest=m)),
    "reviewflag": lambda m: set(ReviewFlag.objects.filter(manifest=m)),
    "verificationrun": lambda m: set(VerificationRun.objects.filter(scope_bundle=m.job.bundle)),
    "retentionevent": lambda m: set(RetentionEvent.objects.filter(bundle=m.job.bundle)),
}


def found(client, name, **query) -> set:
    response = client.get(reverse(f"admin:audit_{name}_changelist"), query)
    assert response.status_code == 200
    return set(response.context["cl"].result_list)


@pytest.mark.parametrize("name", ROWS)
def test_it_finds_each_list_by_file_name_case_label_submitter_and_hash_prefix(admin_client, two_manifests, name):
    claim, paper = two_manifests
    searches = {
        "tracemonkey": paper,
        "Claim-1042": claim,
        "scan-0007": claim,
        "alice": claim,
        "bob": paper,
        paper.correlation_id[:MIN_PREFIX]: paper,
        claim.correlation_id[:16]: claim,
    }
    for term, manifest in searches.items():
        rows = ROWS[name](manifest)
        assert rows and found(admin_client, name, q=term) == rows, term


@pytest.mark.parametrize("name", ROWS)
def test_it_filters_each_list_by_case_label(admin_client, two_manifests, name):
    claim, _ = two_manifests
    assert found(admin_client, name, case_label="claim-1042") == ROWS[name](claim)


@pytest.mark.parametrize("name", [*ROWS, "case", "activityevent"])
def test_the_search_box_says_what_it_searches(admin_client, name):
    page = admin_client.get(reverse(f"admin:audit_{name}_changelist")).content.decode()
    assert 'id="searchbar_helptext"' in page and ("file name" in page or "actor" in page)


def test_a_date_range_filters_findings(admin_client, two_manifests):
    today = timezone.localdate()
    assert found(admin_client, "finding", created_at__from=today.isoformat()) == set(Finding.objects.all())
    assert found(admin_client, "finding", created_at__to=(today - timedelta(days=1)).isoformat()) == set()


@pytest.mark.parametrize("name", ROWS)
def test_a_search_costs_the_same_queries_for_more_rows(admin_client, tmp_path, name):
    url = f"{reverse(f'admin:audit_{name}_changelist')}?q=claim&case_label=claim-1"
    everything_about(completed(tmp_path, 1, "claim-1.pdf", "alice", case_label="claim-1"))
    few = queries_for(admin_client, url)
    for n in range(2, 5):
        everything_about(completed(tmp_path, n, f"claim-{n}.pdf", "alice", case_label="claim-1"))
    verify_all()
    assert queries_for(admin_client, url) == few


def test_it_finds_alerts_by_words_of_their_message_such_as_a_file_name(admin_client):
    from audit.models import Alert
    from audit.operations.alerts import raise_alert

    raise_alert(Alert.Kind.RETENTION_BLOCKED, "a", link="/", message="Retention of input of scan-0007.pdf is blocked.")
    raise_alert(
        Alert.Kind.RETENTION_BLOCKED, "b", link="/", message="Retention of input of tracemonkey.pdf is blocked."
    )
    assert [a.key for a in found(admin_client, "alert", q="scan-0007")] == ["a"]


def test_a_search_of_the_review_queue_finds_closed_flags_too(admin_client, two_manifests):
    claim, _ = two_manifests
    flag = ReviewFlag.objects.get(manifest=claim)
    review.close(flag, "resolved", "reviewer")
    assert found(admin_client, "reviewflag") == set(ReviewFlag.objects.exclude(pk=flag.pk))  # the queue: open ones
    assert found(admin_client, "reviewflag", q="scan-0007") == {flag}
