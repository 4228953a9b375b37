"""Activity events as ledger records: who did what to which object, signed and appended to the ledger in the
transaction that does it, so an insider with the key cannot rewrite the trail without changing a signed
checkpoint every witness holds.

The signed body states the row: actor, action, object, before and after, the event's time (`at`), the time it
was signed (`signed_at`, the time a ledger record gives itself) and the key. Verification runs and signing-key
rotations are activity too (`verification_finished`, `signing_key_published`): their results are ledger records
like any other. Whether an event is authentic is signing.signed_row_problem's rule, as for retention events.
"""

import hashlib
import json
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from audit.ledger import signing, store_witness, tlog
from audit.ledger.manifests import canonical_bytes, timestamp
from audit.models import ActivityEvent
from audit.models.evidence import GENESIS

SCHEMA_VERSION = 1


def statement(event: ActivityEvent, signed_at: datetime, **said) -> dict:
    """What an activity event signs. `said`: `recorded_before_ledger` for events signed at the upgrade."""
    return {
        **said,
        "schema_version": SCHEMA_VERSION,
        "kind": "activity",
        **row_fields(event),
        "signed_at": timestamp(signed_at),
        "key_id": event.key_id,
    }


def row_fields(event: ActivityEvent) -> dict:
    """The row's own columns as its signed body states them."""
    return {
        "actor": event.actor,
        "action": event.action,
        "object_type": event.object_type,
        "object_id": event.object_id,
        "before": event.before,
        "after": event.after,
        "at": timestamp(event.at),
    }


def record(actor: str, action: str, obj, before=None, after=None, at=None) -> ActivityEvent:
    """Write, sign and append one event, under the ledger's one lock in the caller's transaction.

    A database behind the output store (store_witness.py) keeps the event, signed, without a leaf, and stops
    appends: refusing it would fail the very action that closes intake. Verification names it."""
    with transaction.atomic():
        tlog.lock()
        signing.cover()  # a key published now is its own event, appended (and timed) before this one
        at = at or timezone.now()
        last = ActivityEvent.objects.order_by("-pk").values_list("sha256", flat=True).first()
        event = ActivityEvent(
            actor=actor[:150],
            action=action,
            object_type=getattr(obj, "activity_type", None) or type(obj).__name__.lower(),
            object_id=str(obj.pk),
            before=_plain(before),
            after=_plain(after),
            at=at,
            previous_sha256=last or GENESIS,
            key_id=signing.current_key_id(),
        )
        event.sha256 = hashlib.sha256(event.content()).hexdigest()
        body = canonical_bytes(statement(event, event.at))
        event.body, event.signature = body.decode("ascii"), signing.sign(body, event.at)
        twin = signing.mldsa_fields(body, event.at)
        event.mldsa_signature, event.mldsa_key_id = twin["mldsa_signature"], twin["mldsa_key_id"]
        event.save()
        try:
            with transaction.atomic():
                tlog.append(event)
        except store_witness.LedgerRollback as exc:
            store_witness.stop_appends(exc)
    return event


def record_key_published(sender, key, retires: list[str], **kwargs) -> None:
    """A signing key's publication (models/keys.py `key_published`), with the keys it retires."""
    record("signing", "signing_key_published", key, after={**key.as_json(), "retires": retires})


def _plain(value):
    """JSON as stored and signed (a date or a Decimal becomes its text, as the row's JSONField would keep it)."""
    return None if value is None else json.loads(json.dumps(value, default=str))


def problem(event: ActivityEvent, trusted: signing.Trust) -> str | None:
    """None for an authentic event, else why not."""
    return signing.signed_row_problem("activity event", event, row_fields(event), trusted)[1]
