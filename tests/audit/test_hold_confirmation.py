"""Legal holds take a reason and two people: one places the hold (in effect at once), another confirms it; the
list says who did which, never "created by X, approved by X"."""

import pytest
from django.urls import reverse

from audit.models import ActivityEvent, RetentionPolicy
from audit.retention import enforcement as retention
from audit.retention import hold_confirmation
from audit.retention import policies as retention_policies
from audit.retention.enforcement import Refused
from tests.audit.test_retention_approval import as_user, person
from tests.conftest import approved_policy

pytestmark = pytest.mark.django_db
LIST = reverse("admin:audit_retentionpolicy_changelist")


@pytest.fixture
def in_force():
    return approved_policy(is_default=True, input_days=365, contract_owner="Claims Ltd", decision_note="clause 7")


def place(client, policy, reason):
    """The admin's action, through its reason page, as the logged-in user."""
    selected = {"action": "place_legal_hold", "_selected_action": [policy.pk]}
    asked = client.post(LIST, selected)
    assert 'name="reason"' in asked.content.decode()
    return client.post(LIST, {**selected, "post": "yes", "reason": reason}, follow=True)


def confirm_page(hold):
    return reverse("admin:audit_retentionpolicy_confirm_hold", args=[hold.pk])


def test_a_hold_without_a_reason_is_refused_with_a_stable_code(in_force):
    with pytest.raises(Refused) as refused:
        retention.set_legal_hold("claims", True, "counsel", "   ")
    assert refused.value.code == "hold_reason_missing"
    assert retention_policies.in_force_of("claims") == in_force


def test_the_admin_asks_for_the_reason_again_when_it_is_empty(client, in_force):
    page = place(as_user(client, person("ra", "Retention admin")), in_force, "").content.decode()
    assert 'data-code="hold_reason_missing"' in page
    assert not RetentionPolicy.objects.filter(legal_hold=True).exists()


def test_a_placed_hold_protects_at_once_with_its_reason_before_anyone_confirms_it(client, in_force):
    place(as_user(client, person("ra", "Retention admin")), in_force, "Litigation 2026-17, counsel's letter")
    hold = retention_policies.in_force_of("claims")
    assert (hold.legal_hold, hold.status, hold.created_by, hold.approved_by) == (True, "hold_placed", "ra", "")
    assert hold.decision_note == "Litigation 2026-17, counsel's letter"
    assert retention_policies.default_policy() == hold  # still the default: a pending hold is never weaker
    placed = ActivityEvent.objects.get(action="retention_legal_hold_placed")
    assert placed.after["decision_note"] == "Litigation 2026-17, counsel's letter"


def test_the_person_who_placed_a_hold_cannot_confirm_it_even_holding_both_roles(client, in_force):
    ra = person("ra", "Retention admin", "Retention approver")
    place(as_user(client, ra), in_force, "Litigation 2026-17")
    hold = retention_policies.in_force_of("claims")
    page = client.get(confirm_page(hold)).content.decode()
    assert 'data-code="hold_confirm_own"' in page and 'name="_confirm"' not in page
    client.post(confirm_page(hold))
    with pytest.raises(Refused) as refused:
        hold_confirmation.confirm(hold, ra)
    assert refused.value.code == "hold_confirm_own"
    hold.refresh_from_db()
    assert (hold.status, hold.approved_by) == ("hold_placed", "")


def test_a_second_person_confirms_it_and_the_list_says_who_did_which(client, in_force):
    place(as_user(client, person("ra", "Retention admin")), in_force, "Litigation 2026-17")
    hold = retention_policies.in_force_of("claims")
    approver = as_user(client, person("ana", "Retention approver"))
    assert approver.post(confirm_page(hold)).status_code == 302
    hold.refresh_from_db()
    assert (hold.status, hold.created_by, hold.approved_by) == ("hold_confirmed", "ra", "ana")
    assert retention_policies.in_force_of("claims") == hold
    listed = approver.get(LIST).content.decode()
    assert "hold placed by ra, confirmed by ana" in listed and "approved by ra" not in listed
    event = ActivityEvent.objects.get(action="retention_legal_hold_confirmed")
    assert (event.actor, event.after["placed_by"], event.after["confirmed_by"]) == ("ana", "ra", "ana")


def test_a_waiting_hold_reads_as_waiting_not_as_approved_by_its_placer(client, in_force):
    place(as_user(client, person("ra", "Retention admin")), in_force, "Litigation 2026-17")
    listed = client.get(LIST).content.decode()
    assert "hold placed by ra; awaiting confirmation by a second person" in listed
    assert "approved by ra" not in listed


def test_a_hold_lifted_before_its_confirmation_can_no_longer_be_confirmed(in_force):
    hold = retention.set_legal_hold("claims", True, "counsel", "Litigation 2026-17")
    approved_policy(drafted_by="ra", legal_hold=False, decision_note="settled")
    assert retention_policies.in_force_of("claims").legal_hold is False
    with pytest.raises(Refused) as refused:
        hold_confirmation.confirm(hold, person("bo", "Retention approver"))
    assert refused.value.code == "hold_confirm_lost"
    hold.refresh_from_db()
    assert hold.status == "hold_placed"


def test_lifting_a_hold_needs_its_reason_too(in_force):
    retention.set_legal_hold("claims", True, "counsel", "Litigation 2026-17")
    with pytest.raises(Refused) as refused:
        retention.set_legal_hold("claims", False, "counsel", "")
    assert refused.value.code == "hold_reason_missing"
