"""Lists export as CSV and JSON: the rows the list shows (its filters, search, every page), streamed in one
query, cells a spreadsheet would run neutralised, times with their offset, for those who may view the list,
and each export in the activity record."""

import csv
import io
import json
from dataclasses import dataclass
from datetime import datetime

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit.admin.people import ActivityEventAdmin
from audit.ledger import activity_records
from audit.models import ActivityEvent, LogLeaf

pytestmark = pytest.mark.django_db
EVENTS = reverse("admin:audit_activityevent_changelist")


@dataclass
class Thing:
    pk: int
    activity_type = "thing"


def events(actor: str, action: str, n: int) -> list[int]:
    return [activity_records.record(actor, action, Thing(i)).pk for i in range(n)]


def as_role(client, role: str):
    user = User.objects.create_user(role.lower().replace(" ", "-"), password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client.force_login(user)
    return client


def export(client, fmt: str, query: str = "", model: str = "activityevent"):
    response = client.get(reverse(f"admin:audit_{model}_export", args=[fmt]) + query)
    body = b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()
    return response, body


def csv_rows(body: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(body.removeprefix("\ufeff"))))


def listed_ids(client, query: str) -> list[int]:
    """Every row the changelist shows for `query`, page after page."""
    ids, page = [], 1
    while True:
        cl = client.get(f"{EVENTS}?{query}&p={page}").context["cl"]
        ids += [event.pk for event in cl.result_list]
        if page >= cl.paginator.num_pages:
            return ids
        page += 1


def test_it_exports_exactly_the_rows_the_filtered_and_searched_list_shows_on_all_its_pages(client, monkeypatch):
    monkeypatch.setattr(ActivityEventAdmin, "list_per_page", 2)
    events("alice", "flag_raised", 5)
    events("bob", "flag_raised", 2)
    events("alice", "verification_started", 3)
    staff = as_role(client, "Compliance staff")
    query = "action=flag_raised&q=alice"
    shown = listed_ids(staff, query)
    assert len(shown) == 5
    _, body = export(staff, "csv", f"?{query}")
    assert [int(row["id"]) for row in csv_rows(body)] == shown
    _, body = export(staff, "json", f"?{query}")
    assert [row["id"] for row in json.loads(body)] == shown


def test_the_list_links_to_its_export_with_its_own_filters(client):
    page = as_role(client, "Compliance staff").get(f"{EVENTS}?action=flag_raised&p=1").content.decode()
    csv_url = reverse("admin:audit_activityevent_export", args=["csv"])
    assert f'href="{csv_url}?action=flag_raised"' in page


def test_a_cell_a_spreadsheet_would_run_is_neutralised_in_csv_and_kept_in_json(client):
    hostile = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"]
    for actor in hostile:
        activity_records.record(actor, "flag_raised", Thing(1))
    staff = as_role(client, "Compliance staff")
    _, body = export(staff, "csv", "?action=flag_raised")
    assert sorted(row["actor"] for row in csv_rows(body)) == sorted("'" + actor for actor in hostile)
    _, body = export(staff, "json", "?action=flag_raised")
    assert sorted(row["actor"] for row in json.loads(body)) == sorted(hostile)


def test_times_are_iso_8601_with_their_offset(client):
    events("alice", "flag_raised", 1)
    _, body = export(as_role(client, "Compliance staff"), "csv")
    assert datetime.fromisoformat(csv_rows(body)[0]["at"]).utcoffset() is not None


def test_it_refuses_an_export_to_those_who_may_not_view_the_list(client):
    events("alice", "flag_raised", 1)
    response, _ = export(as_role(client, "Submitter"), "csv")
    assert response.status_code == 403
    assert not ActivityEvent.objects.filter(action="list_exported").exists()


def test_each_export_is_a_signed_activity_record_in_the_ledger(client):
    events("alice", "flag_raised", 3)
    staff = as_role(client, "Compliance staff")
    response, _ = export(staff, "json", "?action=flag_raised")
    assert response.status_code == 200
    event = ActivityEvent.objects.get(action="list_exported")
    assert (event.actor, event.object_type, event.object_id) == ("compliance-staff", "list", "audit.activityevent")
    assert event.after == {"format": "json", "query": "action=flag_raised", "rows": 3}
    assert LogLeaf.objects.filter(activity=event).exists() and event.signature


def test_a_long_list_takes_as_many_queries_as_a_short_one(client):
    staff = as_role(client, "Compliance staff")

    def queries() -> int:
        with CaptureQueriesContext(connection) as taken:
            export(staff, "csv", "?action=flag_raised")
        return len(taken)

    events("alice", "flag_raised", 2)
    short = queries()
    events("alice", "flag_raised", 40)
    assert queries() == short


@pytest.mark.parametrize(
    "fmt, query, code",
    [("xlsx", "", "export_unknown_format"), ("csv", "?no_such_field=1", "export_bad_filter")],
)
def test_a_bad_export_address_is_refused_with_a_stable_code(client, fmt, query, code):
    response, body = export(as_role(client, "Compliance staff"), fmt, query)
    assert response.status_code == 400 and body.startswith(f"{code}: ")
    assert not ActivityEvent.objects.filter(action="list_exported").exists()


@pytest.mark.parametrize(
    "model, role",
    [
        ("finding", "Compliance staff"),
        ("reviewflag", "Reviewer"),
        ("retentionevent", "Retention admin"),
        ("retentionpolicy", "Retention approver"),
        ("verificationrun", "Compliance staff"),
        ("manifest", "Compliance staff"),
        ("asset", "Compliance staff"),
        ("alert", "Compliance staff"),
    ],
)
def test_every_list_a_compliance_officer_reads_exports(client, model, role):
    response, body = export(as_role(client, role), "csv", model=model)
    assert response.status_code == 200 and csv_rows(body) == []
    assert body.removeprefix("\ufeff").startswith("id,")


def test_the_job_list_exports_its_rows(client, completed):
    response = as_role(client, "Compliance staff").get(
        reverse("admin:extraction_job_export", args=["json"]) + "?status=completed"
    )
    rows = json.loads(b"".join(response.streaming_content))
    assert [(row["bundle__original_filename"], row["status"]) for row in rows] == [("x.pdf", "completed")]


def test_the_manifest_and_asset_lists_export_their_rows_by_file_name(client, completed):
    from audit.models import Asset, Manifest

    reader = as_role(client, "Compliance staff")
    manifests = json.loads(
        b"".join(reader.get(reverse("admin:audit_manifest_export", args=["json"])).streaming_content)
    )
    assert [(row["job__bundle__original_filename"], row["sha256"]) for row in manifests] == [
        ("x.pdf", Manifest.objects.get().sha256)
    ]
    assets = json.loads(b"".join(reader.get(reverse("admin:audit_asset_export", args=["json"])).streaming_content))
    assert sorted(row["sha256"] for row in assets) == sorted(Asset.objects.values_list("sha256", flat=True))
    assert {row["manifest__job__bundle__original_filename"] for row in assets} == {"x.pdf"}


@pytest.mark.parametrize(
    "query",
    [
        "?at__gte=not-a-date",
        "?o=99.x",
        "?q=%00%ff",
        "?id__regex=(",
        "?p=abc",
        "?all=",
        "?_facets=1",
        "?e=1",
        "?q=" + "x" * 5000,
    ],
)
def test_no_address_makes_the_export_fail_with_an_error_page(client, query):
    events("alice", "flag_raised", 1)
    response, body = export(as_role(client, "Compliance staff"), "csv", query)
    assert response.status_code in (200, 400), (query, response.status_code, body[:300])


def test_the_list_refuses_a_pattern_from_the_address_rather_than_failing_on_it(client):
    events("alice", "flag_raised", 1)
    assert as_role(client, "Compliance staff").get(f"{EVENTS}?actor__regex=(").status_code == 400
