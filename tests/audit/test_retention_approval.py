"""Four-eyes retention: a version drafted by one person takes effect only when another approves it."""

from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from audit.models import ActivityEvent, Manifest, RetentionAssignment, RetentionPolicy
from audit.retention import enforcement as retention
from audit.retention import policies as retention_policies
from extraction.models import Bundle
from tests.conftest import approved_policy, stored_names

pytestmark = pytest.mark.django_db
WINDOWS = dict(
    is_default=True,
    input_days=365,
    output_days=365,
    manifest_days=None,
    legal_hold=False,
    contract_owner="Claims Ltd",
    decision_note="Contract 12, clause 7",
)


@pytest.fixture
def completed(completed):
    """A bundle extracted ten days ago: due under any window shorter than that, whatever the database's clock
    says inside a test transaction (PostgreSQL's stands still at the transaction's start)."""
    Bundle.objects.update(created_at=timezone.now() - timedelta(days=10))
    Manifest.objects.update(created_at=timezone.now() - timedelta(days=10))
    return Bundle.objects.get()


@pytest.fixture(autouse=True)
def minimum(settings):
    settings.PAGETRAIL_RETENTION_MIN_DAYS = 30


def person(username, *roles):
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.groups.add(*Group.objects.filter(name__in=roles))
    return user


def as_user(client, user):
    client.force_login(user)
    return client


def draft(client, **fields):
    """Draft a version through the admin's add form, as the logged-in user."""
    data = {"name": "claims", **WINDOWS, **fields}
    form = {k: "on" if v is True else v for k, v in data.items() if v is not False and v is not None}
    response = client.post(reverse("admin:audit_retentionpolicy_add"), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    return RetentionPolicy.objects.order_by("-pk").first()


def approve(client, policy, **data):
    return client.post(reverse("admin:audit_retentionpolicy_approve", args=[policy.pk]), data, follow=True)


def whole_database() -> dict:
    """Every row of every table, to prove that something wrote nothing."""
    return {m._meta.label: list(m.objects.order_by("pk").values()) for m in apps.get_models()}


# ---------- drafts ----------
def test_it_deletes_nothing_under_a_draft(client, completed):
    draft(as_user(client, person("ra", "Retention admin")), input_days=0, output_days=0)
    assert retention.apply_retention() == []
    assert len(stored_names("inputs")) == 1 and not RetentionAssignment.objects.exists()


def test_it_saves_an_added_version_as_a_draft_and_ignores_a_typed_approver(client):
    policy = draft(as_user(client, person("ra", "Retention admin")), approved_by="Legal director")
    assert (policy.status, policy.approved_by, policy.approved_at, policy.created_by) == ("draft", "", None, "ra")


def test_a_draft_leaves_the_version_in_force_in_force(client, completed):
    approved_policy(**{**WINDOWS, "input_days": 1})
    draft(as_user(client, person("ra", "Retention admin")), input_days=400)
    [done] = [e for e in retention.apply_retention() if e["what"] == "input"]
    assert done["policy"] == "claims v1"


# ---------- who may approve ----------
def test_the_creator_cannot_approve_their_own_draft(client, completed):
    both = person("ra", "Retention admin", "Retention approver")
    policy = draft(as_user(client, both))
    page = approve(client, policy).content.decode()
    assert "You drafted claims v1 (draft): another person with the approve permission must approve it." in page
    policy.refresh_from_db()
    assert policy.status == "draft"


def test_a_user_without_the_approve_permission_is_refused(client):
    policy = draft(as_user(client, person("ra", "Retention admin")))
    as_user(client, person("rb", "Retention admin"))
    url = reverse("admin:audit_retentionpolicy_approve", args=[policy.pk])
    assert (client.get(url).status_code, client.post(url).status_code) == (403, 403)
    policy.refresh_from_db()
    assert policy.status == "draft"


def test_another_approver_approves_and_the_version_takes_effect(client, completed):
    policy = draft(as_user(client, person("ra", "Retention admin")))
    before = timezone.now()
    page = approve(
        as_user(client, person("ana", "Retention approver")), policy, approved_by="Legal director"
    ).content.decode()
    assert "Approved claims v1: it is in force from now." in page
    policy.refresh_from_db()
    assert (policy.status, policy.approved_by) == ("approved", "ana")
    assert before - timedelta(seconds=5) <= policy.approved_at <= timezone.now() + timedelta(seconds=5)
    assert retention_policies.default_policy() == policy


def test_the_approval_is_in_the_activity_record(client, completed):
    policy = draft(as_user(client, person("ra", "Retention admin")))
    approve(as_user(client, person("ana", "Retention approver")), policy)
    event = ActivityEvent.objects.get(action="retention_policy_approved")
    assert (event.actor, event.object_id, event.after["created_by"]) == ("ana", str(policy.pk), "ra")


def test_a_draft_older_than_the_version_in_force_cannot_be_approved(client, completed):
    approved_policy(**WINDOWS)
    stale = draft(as_user(client, person("ra", "Retention admin")), input_days=400)
    retention.set_legal_hold("claims", True, "counsel", "Litigation 2026-17")
    page = approve(as_user(client, person("ana", "Retention approver")), stale).content.decode()
    assert "claims v3, LEGAL HOLD took effect after this draft was written" in page
    stale.refresh_from_db()
    assert stale.status == "draft"


# ---------- what a version would delete ----------
def test_the_approval_page_shows_what_a_shortened_window_would_delete(client, completed):
    approved_policy(**WINDOWS)
    shorter = draft(as_user(client, person("ra", "Retention admin")), input_days=0)
    as_user(client, person("ana", "Retention approver"))
    page = client.get(reverse("admin:audit_retentionpolicy_approve", args=[shorter.pk])).content.decode()
    assert "1 file(s)\n    of 1 bundle(s)" in page
    assert "it shortens the input window from 365 day(s) to 0 day(s)" in page
    assert "<th>Input days</th>" in page and "<th>input_days</th>" not in page  # the form's words, not columns


def test_the_count_shown_is_what_the_next_run_deletes(client, completed):
    approved_policy(**WINDOWS)
    shorter = draft(as_user(client, person("ra", "Retention admin")), input_days=0, output_days=0)
    approve(as_user(client, person("ana", "Retention approver")), shorter, seen_files=7)
    deleted = retention.apply_retention()
    assert (sum(e["files"] for e in deleted), len({e["bundle"] for e in deleted})) == (7, 1)
    assert ActivityEvent.objects.get(action="retention_policy_approved", actor="ana").after["would_delete"] == {
        "bundles": 1,
        "files": 7,
        "bytes": sum(e["bytes_freed"] for e in deleted),
    }


def test_a_shortened_window_is_not_approved_without_confirming_the_count(client, completed):
    approved_policy(**WINDOWS)
    shorter = draft(as_user(client, person("ra", "Retention admin")), input_days=0)
    page = approve(as_user(client, person("ana", "Retention approver")), shorter).content.decode()
    assert "would delete 1 file(s) of 1 bundle(s) on the next run: confirm that number" in page
    shorter.refresh_from_db()
    assert shorter.status == "draft"


def test_a_first_policy_under_the_minimum_needs_the_count_confirmed(client, completed):
    first = draft(as_user(client, person("ra", "Retention admin")), input_days=0, output_days=0)
    page = approve(as_user(client, person("ana", "Retention approver")), first, seen_files=1).content.decode()
    assert "would delete 7 file(s) of 1 bundle(s)" in page
    first.refresh_from_db()
    assert first.status == "draft"


def test_a_first_policy_at_the_minimum_needs_no_count(client, completed):
    first = draft(as_user(client, person("ra", "Retention admin")), input_days=30)
    approve(as_user(client, person("ana", "Retention approver")), first)
    first.refresh_from_db()
    assert first.status == "approved"


def test_the_minimum_is_a_setting(client, completed, settings):
    settings.PAGETRAIL_RETENTION_MIN_DAYS = 400
    first = draft(as_user(client, person("ra", "Retention admin")), input_days=365)
    approve(as_user(client, person("ana", "Retention approver")), first)
    first.refresh_from_db()
    assert first.status == "draft"


# ---------- legal holds ----------
def test_a_legal_hold_placed_from_the_admin_is_immediate(client, completed):
    approved_policy(**{**WINDOWS, "input_days": 0})
    as_user(client, person("ra", "Retention admin"))
    client.post(
        reverse("admin:audit_retentionpolicy_changelist"),
        {
            "action": "place_legal_hold",
            "_selected_action": [RetentionPolicy.objects.get().pk],
            "post": "yes",
            "reason": "Litigation 2026-17",
        },
    )
    [blocked] = retention.apply_retention()
    assert (blocked["outcome"], blocked["policy"]) == ("blocked_by_legal_hold", "claims v2, LEGAL HOLD")
    assert RetentionPolicy.objects.get(version=2).created_by == "ra"


def test_a_legal_hold_lifted_from_the_admin_is_a_draft(client, completed):
    approved_policy(**{**WINDOWS, "input_days": 0})
    held = retention.set_legal_hold("claims", True, "counsel", "Litigation 2026-17")
    as_user(client, person("ra", "Retention admin"))
    client.post(
        reverse("admin:audit_retentionpolicy_changelist"),
        {"action": "lift_legal_hold", "_selected_action": [held.pk], "post": "yes", "reason": "settled"},
    )
    assert RetentionPolicy.objects.get(version=3).status == "draft"
    assert retention.apply_retention()[0]["outcome"] == "blocked_by_legal_hold"


# ---------- the list ----------
def test_the_list_says_draft_in_force_and_superseded(admin_client):
    approved_policy(**WINDOWS)
    approved_policy(**{**WINDOWS, "input_days": 400})
    retention.new_version("claims", "ra", input_days=500)
    page = admin_client.get(reverse("admin:audit_retentionpolicy_changelist")).content.decode()
    rows = [row for row in page.split("<tr") if "claims" in row and "field-standing" in row]
    assert [row.split('field-standing">')[1].split("<")[0] for row in rows] == ["draft", "in force", "superseded"]


def test_a_drafts_page_links_to_its_approval(admin_client):
    policy = retention.new_version("claims", "ra", **WINDOWS)
    page = admin_client.get(reverse("admin:audit_retentionpolicy_change", args=[policy.pk])).content.decode()
    assert reverse("admin:audit_retentionpolicy_approve", args=[policy.pk]) in page


# ---------- dry runs ----------
def test_a_dry_run_leaves_the_database_identical(completed):
    approved_policy(**{**WINDOWS, "input_days": 0, "output_days": 0})
    before = whole_database()
    assert retention.apply_retention(dry_run=True) != []
    call_command("apply_retention", "--dry-run")
    assert whole_database() == before and len(stored_names("inputs")) == 1


def test_the_approval_page_leaves_the_database_identical(client, completed):
    shorter = draft(as_user(client, person("ra", "Retention admin")), input_days=0)
    as_user(client, person("ana", "Retention approver"))
    before = whole_database()
    assert client.get(reverse("admin:audit_retentionpolicy_approve", args=[shorter.pk])).status_code == 200
    assert whole_database() == before


# ---------- versions from before four-eyes approval ----------
@pytest.mark.django_db(transaction=True)
def test_versions_typed_in_before_four_eyes_stay_in_force_marked_as_recorded():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("audit", "0011_alert_input_changed")], [("audit", "0012_retention_four_eyes_approval")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("audit", "RetentionPolicy")
    old.objects.create(
        name="claims",
        version=1,
        is_default=True,
        input_days=30,
        contract_owner="x",
        approved_by="Legal director",
        approved_at=timezone.now(),
        decision_note="z",
        created_by="ra",
    )
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    policy = RetentionPolicy.objects.get()
    assert (policy.status, policy.approved_by, retention_policies.default_policy()) == (
        "recorded",
        "Legal director",
        policy,
    )
