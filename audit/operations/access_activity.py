"""Changes to who may do what become activity events: users, groups, their permissions and memberships, service
accounts and their tokens (tokens: extraction/accounts.py sends them), second-factor devices changed in the admin
(enrolment codes and resets: portal/enrolment.py sends them). Admin changes come with their actor from
the admin's own change entry; membership and permission changes with their exact before and after, made by the
request's user (core/actor.py) or `system`."""

from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.auth.models import Group, Permission, User

from audit.ledger import activity_records
from core import actor

WATCHED = {("auth", "user"), ("auth", "group"), ("extraction", "serviceaccount"), ("otp_totp", "totpdevice")}
VERBS = {ADDITION: "added", CHANGE: "changed", DELETION: "deleted"}


class Ref:
    """An object the activity record names that may no longer exist (a deleted user)."""

    def __init__(self, model: str, pk: str):
        self.activity_type, self.pk = model, pk


def record_admin_change(sender, instance: LogEntry, created: bool, **kwargs) -> None:
    """An admin addition, change or deletion of a user, group or service account."""
    content_type = instance.content_type
    kind = (content_type.app_label, content_type.model) if content_type is not None else None
    if not created or kind not in WATCHED:
        return
    activity_records.record(
        instance.user.get_username(),
        f"{kind[1]}_{VERBS.get(instance.action_flag, 'changed')}",
        Ref(kind[1], instance.object_id or ""),
        after={"object": instance.object_repr, "change": instance.get_change_message()},
    )


def record_membership(sender, instance, action: str, reverse: bool, model, pk_set, **kwargs) -> None:
    """Groups of a user, permissions of a user or a group: who was added or removed, named."""
    if action not in ("post_add", "post_remove", "pre_clear"):
        return
    if action == "pre_clear":  # after the clear the names are gone
        field = _field(sender)
        related = model.objects.filter(**{field: instance}) if reverse else getattr(instance, field)
        pk_set = set(related.values_list("pk", flat=True))
    names = sorted(_name(row) for row in model.objects.filter(pk__in=pk_set or ()))
    if not names:
        return
    change = "added" if action == "post_add" else "removed"
    activity_records.record(
        actor.current(),
        f"{_field(sender) if not reverse else type(instance).__name__.lower() + '_members'}_changed",
        instance,
        after={change: names},
    )


def _field(through) -> str:
    return {
        User.groups.through: "groups",
        User.user_permissions.through: "user_permissions",
        Group.permissions.through: "permissions",
    }[through]


def _name(row) -> str:
    if isinstance(row, Permission):
        return f"{row.content_type.app_label}.{row.codename}"
    return str(row)
