"""Four-eyes approval of retention policy versions.

A version drafted by one person takes effect only when a different person holding
`audit.approve_retentionpolicy` approves it from their own session. A version that could delete
more, or sooner, shows how much it would delete (counted by a dry run) and is approved only by
someone who confirmed that number.
"""

from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from audit.ledger import activity_records
from audit.models import RetentionPolicy
from audit.retention import legal_holds
from audit.retention.enforcement import WINDOWS, Refused, database_now, snapshot, would_delete
from audit.retention.policies import in_force_of

PERMISSION = "audit.approve_retentionpolicy"


@dataclass
class Review:
    """What an approver sees before approving: the draft beside the version in force, and its effect."""

    draft: RetentionPolicy
    current: RetentionPolicy | None
    refusal: str | None
    reasons: list[str] = field(default_factory=list)
    impact: dict = field(default_factory=dict)
    impact_in_force: dict = field(default_factory=dict)


def reasons_to_count(draft: RetentionPolicy, current: RetentionPolicy | None) -> list[str]:
    """Why the approver must see what the draft deletes first: it could delete more, or sooner."""
    if current is None:
        minimum = settings.PAGETRAIL_RETENTION_MIN_DAYS
        return [
            f"a first version whose {w.replace('_days', '')} window of {getattr(draft, w)} day(s) is under "
            f"the {minimum}-day minimum"
            for w in WINDOWS
            if getattr(draft, w) is not None and getattr(draft, w) < minimum
        ]
    reasons = [
        f"it shortens the {w.replace('_days', '')} window from {_days(getattr(current, w))} to "
        f"{_days(getattr(draft, w))}"
        for w in WINDOWS
        if _shorter(getattr(draft, w), getattr(current, w))
    ]
    if current.legal_hold and not draft.legal_hold:
        reasons.append("it lifts the legal hold")
    if draft.is_default and not current.is_default:
        reasons.append("it becomes the default for bundles not yet under a policy")
    return reasons


def _shorter(new, old) -> bool:
    return new is not None and (old is None or new < old)


def _days(days) -> str:
    return "forever" if days is None else f"{days} day(s)"


def refusal(draft: RetentionPolicy, user, current: RetentionPolicy | None) -> str | None:
    """Why this user may not approve this draft now, or None."""
    if not user.has_perm(PERMISSION):
        return "You do not hold the permission to approve retention policies."
    if draft.status != RetentionPolicy.Status.DRAFT:
        return f"{draft} is not a draft: it is {draft.get_status_display()} ({draft.approved_by})."
    if draft.created_by == user.get_username():
        return f"You drafted {draft}: another person with the approve permission must approve it."
    if current is not None and current.version > draft.version:
        return f"{current} took effect after this draft was written: draft a new version from it instead."
    return None


def review(draft: RetentionPolicy, user, at=None) -> Review:
    """The approval page's content, computed without writing anything."""
    current = in_force_of(draft.name)
    return Review(
        draft,
        current,
        refusal(draft, user, current),
        reasons_to_count(draft, current),
        would_delete(draft, at),
        would_delete(None, at),
    )


def approve(draft: RetentionPolicy, user, seen_files: int | None = None, at=None) -> Review:
    """Approve `draft` as `user` (from the session). `seen_files`: the file count the approver confirmed,
    required when the draft could delete more or sooner. Raises Refused with the reason it may not."""
    at = at or database_now()
    found = review(draft, user, at)
    if found.refusal:
        raise Refused(found.refusal)
    if found.reasons and seen_files != found.impact["files"]:
        raise Refused(
            f"Approving {draft} would delete {found.impact['files']} file(s) of "
            f"{found.impact['bundles']} bundle(s) on the next run: confirm that number to approve it."
        )
    with transaction.atomic():
        if not draft.approve(user.get_username(), at):
            raise Refused(f"{draft} was approved by someone else, or a newer version took effect, first.")
        legal_holds.record_change(draft, found.current)
        activity_records.record(
            user.get_username(),
            "retention_policy_approved",
            draft,
            at=at,
            before=snapshot(found.current),
            after={
                **snapshot(draft),
                "approved_by": draft.approved_by,
                "created_by": draft.created_by,
                "reasons_to_count": found.reasons,
                "would_delete": found.impact,
                "would_delete_under_version_in_force": found.impact_in_force,
            },
        )
    return found
