"""A legal hold's second person: who placed it is on record, and someone else confirms it.

Unlike a policy change (approval.py), a hold is in effect from the moment it is placed: it can only
stop deletions, and a hold that waited for a second signature would leave files deletable in the meantime. So
the second person confirms rather than enables: confirming writes who stood behind the hold and when, and
never changes what it protects. The same rules as approval hold otherwise: the approve permission, from the
confirmer's own session, never the person who placed it (even with both roles, or as a superuser).
"""

from django.db import transaction

from audit.ledger import activity_records
from audit.models import RetentionPolicy
from audit.retention.approval import PERMISSION
from audit.retention.enforcement import Refused, database_now, snapshot


def refusal(hold: RetentionPolicy, user) -> Refused | None:
    """Why this user may not confirm this hold now (a stable code and a sentence), or None."""
    if not user.has_perm(PERMISSION):
        return Refused("You do not hold the permission to confirm legal holds.", code="hold_confirm_forbidden")
    if hold.status != RetentionPolicy.Status.HOLD_PLACED:
        return Refused(
            f"{hold} is not a legal hold waiting for confirmation: it is {hold.get_status_display()}.",
            code="hold_not_pending",
        )
    if hold.created_by == user.get_username():
        return Refused(
            f"You placed the legal hold {hold}: another person with the approve permission must confirm it.",
            code="hold_confirm_own",
        )
    return None


def confirm(hold: RetentionPolicy, user, at=None) -> RetentionPolicy:
    """Confirm `hold` as `user` (from the session). Raises Refused with a code and the reason it may not."""
    refused = refusal(hold, user)
    if refused:
        raise refused
    at = at or database_now()
    with transaction.atomic():
        if not hold.confirm_hold(user.get_username(), at):
            raise Refused(
                f"{hold} was confirmed by someone else, or a newer version took effect, first.",
                code="hold_confirm_lost",
            )
        activity_records.record(
            user.get_username(),
            "retention_legal_hold_confirmed",
            hold,
            at=at,
            after={**snapshot(hold), "placed_by": hold.created_by, "confirmed_by": hold.approved_by},
        )
    return hold
