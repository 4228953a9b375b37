"""Every extraction list found by the names people know: file name, case label, submitter, the start of a hash;
filtered by case label and by a date range of one's own."""

import pytest
from django.urls import reverse
from django.utils import timezone

from extraction.intake.staging import submit_bundle
from extraction.models import Bundle, Job, Rejection, Submission
from extraction.search import MIN_PREFIX
from tests.extraction.test_admin import distinct_pdf, queries_for

pytestmark = pytest.mark.django_db

LISTS = {
    "bundle": ("admin:extraction_bundle_changelist", lambda b: b),
    "job": ("admin:extraction_job_changelist", lambda b: b.jobs.get()),
    "submission": ("admin:extraction_submission_changelist", lambda b: Submission.objects.get(sha256=b.correlation_id)),
}


def uploaded(directory, number, filename, submitted_by, case_label="") -> Bundle:
    with open(distinct_pdf(directory, number), "rb") as fh:
        job_id = submit_bundle(fh, filename=filename, submitted_by=submitted_by, case_label=case_label).job_id
    return Job.objects.get(pk=job_id).bundle


@pytest.fixture
def two_bundles(tmp_path):
    claim = uploaded(tmp_path, 1, "scan-0007.pdf", "alice", case_label="claim-1042")
    paper = uploaded(tmp_path, 2, "tracemonkey.pdf", "bob")
    return claim, paper


def found(client, changelist, **query) -> list:
    response = client.get(reverse(changelist), query)
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


@pytest.mark.parametrize("name", LISTS)
def test_it_finds_each_list_by_file_name_case_label_submitter_and_hash_prefix(admin_client, two_bundles, name):
    changelist, row_of = LISTS[name]
    claim, paper = two_bundles
    searches = {
        "tracemonkey": paper,
        "TRACEMONK": paper,
        "claim-1042": claim,
        "scan-0007": claim,
        "alice": claim,
        "bob": paper,
        paper.correlation_id[:MIN_PREFIX]: paper,
        claim.correlation_id[:20].upper(): claim,
    }
    for term, bundle in searches.items():
        assert found(admin_client, changelist, q=term) == [row_of(bundle)], term


def test_a_few_hex_digits_are_read_as_a_name_not_a_hash(admin_client, two_bundles):
    claim, _ = two_bundles
    assert found(admin_client, "admin:extraction_bundle_changelist", q=claim.correlation_id[: MIN_PREFIX - 1]) == []


def test_it_still_finds_a_job_by_its_exact_idempotency_key(admin_client, two_bundles):
    job = two_bundles[0].jobs.get()
    assert found(admin_client, "admin:extraction_job_changelist", q=job.idempotency_key) == [job]


def test_it_finds_rejections_by_file_name_submitter_and_hash_prefix(admin_client, tmp_path):
    with open(__file__, "rb") as fh:
        submit_bundle(fh, filename="notes-claim-1042.txt", submitted_by="carol")
    rejection = Rejection.objects.get()
    for term in ("claim-1042", "carol", rejection.sha256[:8]):
        assert found(admin_client, "admin:extraction_rejection_changelist", q=term) == [rejection], term
    assert found(admin_client, "admin:extraction_rejection_changelist", q="tracemonkey") == []


@pytest.mark.parametrize("name", LISTS)
def test_the_search_box_says_what_it_searches(admin_client, name):
    page = admin_client.get(reverse(LISTS[name][0])).content.decode()
    assert "Finds a file name, case label or submitter by any part of it" in page


def test_a_search_with_a_nul_character_is_an_answer_not_an_error_page(admin_client, two_bundles):
    # PostgreSQL refuses a NUL in any string: every admin address holding one is refused in words, search and
    # filters alike (portal/admin_queries.py), before a list runs.
    for query in ({"q": "trace\x00monkey"}, {"case_label": "claim\x00-1042"}):
        response = admin_client.get(reverse("admin:extraction_job_changelist"), query)
        assert response.status_code == 400 and 'data-code="admin_query_nul"' in response.content.decode()


def test_it_filters_jobs_by_case_label_and_offers_the_labels(admin_client, two_bundles):
    claim, _ = two_bundles
    page = admin_client.get(reverse("admin:extraction_job_changelist")).content.decode()
    assert "?case_label=claim-1042" in page
    assert found(admin_client, "admin:extraction_job_changelist", case_label="claim-1042") == [claim.jobs.get()]
    assert found(admin_client, "admin:extraction_job_changelist", case_label="no-such-case") == []


def test_a_date_range_of_ones_own_includes_both_days(admin_client, two_bundles):
    claim, paper = two_bundles
    day = timezone.localtime().replace(year=2026, month=3, day=10, hour=23, minute=59)
    Bundle.objects.filter(pk=claim.pk).update(created_at=day)
    Bundle.objects.filter(pk=paper.pk).update(created_at=day.replace(day=12, hour=0, minute=0))
    bundles = "admin:extraction_bundle_changelist"

    assert found(admin_client, bundles, created_at__from="2026-03-10", created_at__to="2026-03-10") == [claim]
    assert found(admin_client, bundles, created_at__from="2026-03-11") == [paper]
    assert found(admin_client, bundles, created_at__to="2026-03-11") == [claim]
    assert set(found(admin_client, bundles, created_at__from="2026-03-10", created_at__to="2026-03-12")) == {
        claim,
        paper,
    }


def test_the_date_range_form_keeps_the_search_and_other_filters(admin_client, two_bundles):
    page = admin_client.get(reverse("admin:extraction_bundle_changelist"), {"q": "claim", "mime": "application/pdf"})
    form = page.content.decode().split('class="date-range"')[1].split("</form>")[0]
    assert 'name="q" value="claim"' in form and 'name="mime" value="application/pdf"' in form
    assert 'name="created_at__from"' in form and 'name="created_at__to"' in form


def test_a_date_that_is_not_one_is_ignored_and_said(admin_client, two_bundles):
    response = admin_client.get(reverse("admin:extraction_bundle_changelist"), {"created_at__from": "10/03/2026"})
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == 2
    assert "(bad_date): write a day as YYYY-MM-DD" in response.content.decode()


@pytest.mark.parametrize("name", LISTS)
def test_a_search_and_filters_cost_the_same_queries_for_more_rows(admin_client, tmp_path, name):
    since = "enqueued_at__from" if name == "job" else "created_at__from"
    label = "" if name == "submission" else "&case_label=claim-1"  # a submission's label is its own, not a filter
    url = f"{reverse(LISTS[name][0])}?q=claim{label}&{since}=2026-01-01"
    uploaded(tmp_path, 1, "claim-1.pdf", "alice", case_label="claim-1")
    few = queries_for(admin_client, url)
    for n in range(2, 6):
        uploaded(tmp_path, n, f"claim-{n}.pdf", "alice", case_label=f"claim-{n}")
    assert queries_for(admin_client, url) == few


def test_days_at_the_ends_of_the_calendar_bound_nothing_rather_than_overflow(admin_client, two_bundles, settings):
    settings.TIME_ZONE = "Asia/Tokyo"  # east of UTC: midnight of 1 January of year 1 is before year 1 in UTC
    bundles = "admin:extraction_bundle_changelist"
    ends = {"created_at__from": "0001-01-01", "created_at__to": "9999-12-31"}
    assert set(found(admin_client, bundles, **ends)) == set(two_bundles)


def test_a_submitter_is_offered_only_the_case_labels_of_bundles_they_may_see(client, tmp_path):
    from django.contrib.auth.models import Group, User

    sam = User.objects.create_user("sam", password="pw", is_staff=True)
    sam.groups.add(Group.objects.get(name="Submitter"))
    uploaded(tmp_path, 1, "theirs.pdf", "alice", case_label="alices-secret-case")
    mine = uploaded(tmp_path, 2, "mine.pdf", "sam", case_label="sam-case")
    client.force_login(sam)
    page = client.get(reverse("admin:extraction_bundle_changelist")).content.decode()
    assert "?case_label=sam-case" in page and "alices-secret-case" not in page
    assert found(client, "admin:extraction_bundle_changelist", q="alices-secret") == []
    assert found(client, "admin:extraction_bundle_changelist", q="mine") == [mine]
