"""Which retention policy version is in force: look-ups that retention, legal holds and WORM storage share (the
versions themselves are written by enforcement.py and approval.py)."""

from django.db import models
from django.db.models import OuterRef, Subquery

from audit.models import RetentionPolicy


def effective() -> models.QuerySet:
    return RetentionPolicy.objects.filter(status__in=RetentionPolicy.EFFECTIVE)


def in_force() -> models.QuerySet:
    """The version in force of each named policy: its newest version in effect."""
    newest = effective().filter(name=OuterRef("name")).order_by("-version").values("pk")[:1]
    return effective().filter(pk=Subquery(newest))


def in_force_of(name: str) -> RetentionPolicy | None:
    return effective().filter(name=name).order_by("-version").first()


def newest_default(policies) -> RetentionPolicy | None:
    defaults = [p for p in policies if p.is_default and p.took_effect_at]
    return max(defaults, key=lambda p: (p.took_effect_at, p.pk), default=None)


def default_policy() -> RetentionPolicy | None:
    """For bundles not yet under a policy: the in-force default version that took effect last."""
    return newest_default(in_force())


def on_hold(policy: RetentionPolicy) -> bool:
    current = in_force_of(policy.name)
    return bool(current and current.legal_hold)
