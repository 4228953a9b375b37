"""Retention: versioned policies and their enforcement, every deletion or block recorded.

Only versions in effect count: a draft (a change no second person approved yet) deletes nothing
(see approval.py). Windows come from the version a bundle was assigned; a legal hold comes
from the version of that policy in force, so a hold placed today stops deletions today. Time is the
database's clock.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import overload

from django.db import connection, transaction

from audit.ledger import activity_records, store_witness
from audit.models import Asset, Manifest, PagePreview, RetentionAssignment, RetentionEvent, RetentionPolicy
from audit.operations.alerts import raise_alert
from audit.retention import events as retention_events
from audit.retention import legal_holds, worm
from audit.retention.policies import in_force, in_force_of, newest_default
from core import stores
from extraction.models import Bundle, Job

POLICY_FIELDS = (
    "is_default",
    "input_days",
    "output_days",
    "manifest_days",
    "legal_hold",
    "contract_owner",
    "decision_note",
)
WINDOWS = ("input_days", "output_days", "manifest_days")


class Refused(Exception):
    """A policy change that may not happen; the message says why, for the person who tried, and `code` is
    stable for anything that reads it."""

    def __init__(self, message: str, code: str = "retention_refused"):
        super().__init__(message)
        self.code = code


def database_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT CURRENT_TIMESTAMP")
        value = cursor.fetchone()[0]
    return datetime.fromisoformat(value).replace(tzinfo=UTC) if isinstance(value, str) else value


def _next_number(name: str) -> int:
    latest = RetentionPolicy.objects.filter(name=name).order_by("-version").values_list("version", flat=True).first()
    return (latest or 0) + 1


def new_version(name: str, by: str, **fields) -> RetentionPolicy:
    """A policy change, drafted: the next version, from the one in force. It deletes nothing until
    someone else approves it (`retention_approval.approve`)."""
    with transaction.atomic():
        current = in_force_of(name)
        values = {**({f: getattr(current, f) for f in POLICY_FIELDS} if current else {}), **fields}
        policy = RetentionPolicy.objects.create(
            name=name, version=_next_number(name), created_by=by[:150], status=RetentionPolicy.Status.DRAFT, **values
        )
        activity_records.record(
            by, "retention_policy_drafted", policy, before=snapshot(current), after=snapshot(policy)
        )
    return policy


def set_legal_hold(name: str, on: bool, by: str, note: str) -> RetentionPolicy:
    """Placing a hold takes effect at once (it only stops deletions) and waits for a second person to confirm
    it (hold_confirmation.py); lifting one is a draft like any change. Either needs its reason, `note`, kept as
    the version's decision note: the matter or instruction it is for."""
    reason = note.strip()
    if not reason:
        raise Refused(
            "A legal hold is placed or lifted only with its reason (the matter, case or instruction it is for).",
            code="hold_reason_missing",
        )
    if not on:
        return new_version(name, by, legal_hold=False, decision_note=reason)
    with transaction.atomic():
        current = in_force_of(name)
        if current is None:
            raise Refused(
                f"{name} has no version in force, so nothing is deleted under it: there is nothing to hold.",
                code="hold_nothing_in_force",
            )
        values = {**{f: getattr(current, f) for f in POLICY_FIELDS}, "legal_hold": True, "decision_note": reason}
        policy = RetentionPolicy.objects.create(
            name=name,
            version=_next_number(name),
            created_by=by[:150],
            created_at=database_now(),
            status=RetentionPolicy.Status.HOLD_PLACED,
            **values,
        )
        activity_records.record(
            by,
            "retention_legal_hold_placed",
            policy,
            before=snapshot(current),
            after=snapshot(policy),
            at=policy.created_at,
        )
        legal_holds.record_change(policy, current)
    return policy


@overload
def snapshot(policy: RetentionPolicy) -> dict: ...
@overload
def snapshot(policy: RetentionPolicy | None) -> dict | None: ...
def snapshot(policy: RetentionPolicy | None) -> dict | None:
    return (
        {"version": policy.version, "status": policy.status, **{f: str(getattr(policy, f)) for f in POLICY_FIELDS}}
        if policy
        else None
    )


class Book:
    """The versions retention reads, loaded once. Reading it writes nothing.

    `assuming`: a draft read as if it were approved now, to count what approving it would delete.
    """

    def __init__(self, assuming: RetentionPolicy | None = None):
        self.in_force = {p.name: p for p in in_force()}
        if assuming is not None:
            self.in_force[assuming.name] = assuming
        others = [p for p in self.in_force.values() if p is not assuming]
        self.default = assuming if assuming is not None and assuming.is_default else newest_default(others)
        policies = {
            p.pk: p for p in RetentionPolicy.objects.filter(pk__in=RetentionAssignment.objects.values("policy"))
        }
        self.assigned = {b: policies[p] for b, p in RetentionAssignment.objects.values_list("bundle_id", "policy_id")}

    def policy_for(self, bundle: Bundle) -> RetentionPolicy | None:
        """The version assigned to the bundle, else the default in force (which a real run pins)."""
        return self.assigned.get(bundle.pk) or self.default

    def on_hold(self, policy: RetentionPolicy) -> bool:
        return self.in_force.get(policy.name, policy).legal_hold


def pin(bundle: Bundle, policy: RetentionPolicy) -> RetentionPolicy:
    """Fix the version a bundle falls under, once: later versions do not change its windows."""
    return RetentionAssignment.objects.get_or_create(bundle=bundle, defaults={"policy": policy})[0].policy


def apply_retention(at=None, dry_run: bool = False) -> list[dict]:
    """Delete what is due for every bundle whose jobs are all terminal; returns what was (or would be) done.

    A dry run writes nothing at all: no assignment, no event, no alert.
    """
    if not dry_run:
        store_witness.check_next()  # a store ahead of the database: delete nothing that could not be recorded
    return _run(Book(), at or database_now(), dry_run)


def would_delete(assuming: RetentionPolicy | None = None, at=None) -> dict:
    """What the next run would delete, with `assuming` in force: bundles, files and bytes, by a dry run."""
    deleted = [
        e
        for e in _run(Book(assuming), at or database_now(), dry_run=True)
        if e["outcome"] == RetentionEvent.Outcome.DELETED
    ]
    return {
        "bundles": len({e["bundle"] for e in deleted}),
        "files": sum(e["files"] for e in deleted),
        "bytes": sum(e["bytes_freed"] for e in deleted),
    }


def _run(book: Book, now, dry_run: bool) -> list[dict]:
    done = [
        _decide(bundle, manifest, policy, what, now, dry_run, blocked)
        for bundle, manifest, policy, what, blocked in _plan(book, now, dry_run)
    ]
    return [d for d in done if d]


def _plan(book: Book, now, dry_run: bool) -> Iterator[tuple]:
    """What is due, bundle by bundle, as (bundle, manifest or None, policy, what, blocked by a hold); each
    bundle's list is read whole before any of it is decided."""
    for bundle in Bundle.objects.exclude(jobs__status__in=Job.ACTIVE).order_by("pk"):
        policy = book.policy_for(bundle)
        if policy is not None:
            policy = policy if dry_run else pin(bundle, policy)
            blocked = book.on_hold(policy)
            for manifest, what in _due_of(bundle, policy, now):
                yield bundle, manifest, policy, what, blocked


def _due_of(bundle, policy, now) -> list[tuple[Manifest | None, str]]:
    due: list[tuple[Manifest | None, str]] = []
    if _due(bundle.created_at, policy.input_days, now) and not bundle.input_deleted_at:
        due.append((None, RetentionEvent.What.INPUT))
    for manifest in Manifest.objects.filter(job__bundle=bundle):
        if _due(manifest.created_at, policy.output_days, now) and not _deleted(manifest, "outputs"):
            due.append((manifest, RetentionEvent.What.OUTPUTS))
        if _due(manifest.created_at, policy.manifest_days, now) and not _deleted(manifest, "manifest_file"):
            due.append((manifest, RetentionEvent.What.MANIFEST_FILE))
    return due


@dataclass(frozen=True)
class DueFile:
    """One stored file the next run would delete: what an approver reads before approving."""

    bundle: Bundle
    manifest: Manifest | None
    what: str
    name: str
    size: int


def files_due(assuming: RetentionPolicy | None = None, at=None) -> Iterator[DueFile]:
    """Every file the next run would delete with `assuming` in force: the run's own plan and decisions, dry
    (so the list is exactly what enforcement deletes, and `would_delete` counts it)."""
    now = at or database_now()
    for bundle, manifest, policy, what, blocked in _plan(Book(assuming), now, dry_run=True):
        entry = _decide(bundle, manifest, policy, what, now, True, blocked)
        if entry and entry["outcome"] == RetentionEvent.Outcome.DELETED:
            yield from (DueFile(bundle, manifest, what, name, size) for name, size in _files(bundle, manifest, what))


def _due(since, days, now) -> bool:
    return days is not None and since + timedelta(days=days) <= now


def _deleted(manifest, what) -> bool:
    return manifest.retention_events.filter(what=what, outcome=RetentionEvent.Outcome.DELETED).exists()


def _decide(bundle, manifest, policy, what, now, dry_run, blocked) -> dict | None:
    files = _files(bundle, manifest, what)
    kept = None if blocked or what == RetentionEvent.What.INPUT else worm.why_kept([n for n, _ in files], now)
    Outcome = RetentionEvent.Outcome
    entry = {
        "bundle": bundle.correlation_id,
        "manifest": manifest.sequence if manifest else None,
        "what": what,
        "outcome": Outcome.BLOCKED if blocked else Outcome.POSTPONED if kept else Outcome.DELETED,
        "policy": str(policy),
        "files": len(files),
        "bytes_freed": sum(size for _, size in files),
        **({"postponed_because": kept} if kept else {}),
    }
    if dry_run:
        return entry
    if blocked or kept:
        return entry if _record_once(bundle, manifest, policy, what, entry["outcome"], files, now, kept) else None
    entry["deletion"] = _delete(bundle, what, files, now)
    event = retention_events.record(
        bundle=bundle,
        manifest=manifest,
        policy=policy,
        what=what,
        at=now,
        outcome=Outcome.DELETED,
        files=entry["files"],
        bytes_freed=entry["bytes_freed"],
        **retention_events.signed_fields(
            bundle, manifest, policy, what, Outcome.DELETED, files, now, {"deletion": entry["deletion"]}
        ),
    )
    activity_records.record("retention", "retention_deleted", event, after=entry)
    return entry


def _record_once(bundle, manifest, policy, what, outcome, files, now, kept) -> bool:
    """A block or a postponement is recorded once per policy version, not every night. A block alerts: a
    person decided it; a postponement does not: the lock a policy set ends, and the next run deletes."""
    if RetentionEvent.objects.filter(
        bundle=bundle, manifest=manifest, what=what, policy=policy, outcome=outcome
    ).exists():
        return False
    retention_events.record(
        bundle=bundle,
        manifest=manifest,
        what=what,
        policy=policy,
        outcome=outcome,
        at=now,
        **retention_events.signed_fields(
            bundle, manifest, policy, what, outcome, files, now, {"postponed_because": kept} if kept else None
        ),
    )
    if outcome == RetentionEvent.Outcome.BLOCKED:
        raise_alert(
            "retention_blocked",
            f"legal-hold-{policy.name}",
            link="/admin/audit/retentionevent/",
            message=f"Retention of {what} of {bundle.file_name} (bundle {bundle.correlation_id[:16]}) is blocked by "
            f"the legal hold on {policy.name}.",
        )
    return True


def _files(bundle, manifest, what) -> list[tuple[str, int]]:
    """The stored files (name, size) one decision covers; previews share their outputs' window."""
    if what == RetentionEvent.What.INPUT:
        return [(bundle.input_name, bundle.size)]
    if what == RetentionEvent.What.OUTPUTS:
        return [
            *Asset.objects.filter(manifest=manifest).values_list("name", "size"),
            *PagePreview.objects.filter(manifest=manifest).values_list("storage_name", "size"),
        ]
    return [(manifest.storage_name, len(manifest.body))]


def _delete(bundle, what, files, now) -> str:
    """Delete the files; returns what that did to them (worm.deletion_kind), as the event signs it."""
    store = stores.inputs() if what == RetentionEvent.What.INPUT else stores.outputs()
    deletion = worm.deletion_kind(store)
    for name, _ in files:
        store.delete(name)
    if what == RetentionEvent.What.INPUT:
        bundle.mark_input_deleted(now)
    return deletion


def overdue_inputs(now=None):
    """Inputs kept past their window with no legal hold: a finding for verification runs."""
    now, book = now or database_now(), Book()
    for assignment in RetentionAssignment.objects.select_related("bundle", "policy").filter(
        bundle__input_deleted_at__isnull=True, policy__input_days__isnull=False
    ):
        if _due(assignment.bundle.created_at, assignment.policy.input_days, now) and not book.on_hold(
            assignment.policy
        ):
            yield assignment.bundle
