"""Who may do what is evidence too: users, groups, permissions, memberships, service accounts and tokens
changed through the admin (or anywhere) each leave an activity event naming who changed what."""

import pytest
from django.contrib.auth.models import Group, Permission, User

from audit.models import ActivityEvent
from extraction.accounts import ServiceAccount

pytestmark = pytest.mark.django_db


def events(action: str) -> list[ActivityEvent]:
    return list(ActivityEvent.objects.filter(action=action).order_by("pk"))


def test_a_user_added_in_the_admin_is_recorded_with_who_added_them(admin_client, admin_user):
    answer = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "rita",
            "password1": "A long pass phrase 42",
            "password2": "A long pass phrase 42",
            "usable_password": "true",
        },
    )
    assert answer.status_code == 302, answer.content[:2000]
    [added] = events("user_added")
    assert (added.actor, added.object_id, added.after["object"]) == (
        admin_user.get_username(),
        str(User.objects.get(username="rita").pk),
        "rita",
    )


def test_a_role_granted_names_the_group_and_the_granter(admin_client, admin_user):
    rita, reviewers = User.objects.create_user("rita"), Group.objects.create(name="Reviewers")
    joined = rita.date_joined
    form = {
        "username": "rita",
        "is_active": "on",
        "groups": [reviewers.pk],
        "date_joined_0": joined.strftime("%Y-%m-%d"),
        "date_joined_1": joined.strftime("%H:%M:%S"),
    }
    answer = admin_client.post(f"/admin/auth/user/{rita.pk}/change/", form)
    assert answer.status_code == 302, answer.context["adminform"].form.errors
    [granted] = events("groups_changed")
    assert (granted.actor, granted.object_id, granted.after) == (
        admin_user.get_username(),
        str(rita.pk),
        {"added": ["Reviewers"]},
    )
    assert events("user_changed")[0].after["change"]  # the admin's own account of what changed


def test_permissions_of_a_group_changed_anywhere_are_recorded_by_name():
    group = Group.objects.create(name="Compliance")
    permission = Permission.objects.get(codename="run_verification")
    group.permissions.add(permission)
    group.permissions.remove(permission)
    assert [(e.actor, e.after) for e in events("permissions_changed") if e.object_id == str(group.pk)] == [
        ("system", {"added": ["audit.run_verification"]}),
        ("system", {"removed": ["audit.run_verification"]}),
    ]


def test_tokens_issued_and_revoked_are_recorded_with_their_prefix():
    account = ServiceAccount.objects.create(name="claims-ingest")
    secret = account.issue_token(by="ops@example")
    token = account.tokens.get()
    token.revoke(by="ops@example")
    account.revoke(by="ops@example")
    issued, revoked = events("token_issued"), events("token_revoked")
    assert [(e.actor, e.after["prefix"]) for e in issued + revoked] == [("ops@example", secret[:10])] * 2
    assert [e.after["account"] for e in events("service_account_revoked")] == ["claims-ingest"]


def test_a_group_emptied_from_its_own_side_names_everyone_removed():
    group = Group.objects.create(name="Reviewers")
    rita, sam = User.objects.create_user("rita"), User.objects.create_user("sam")
    group.user_set.add(rita, sam)
    group.user_set.clear()
    assert [e.after for e in events("group_members_changed") if e.object_id == str(group.pk)] == [
        {"added": ["rita", "sam"]},
        {"removed": ["rita", "sam"]},
    ]
