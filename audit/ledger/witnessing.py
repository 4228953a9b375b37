"""The log asks witnesses to cosign its checkpoints (C2SP tlog-witness) and keeps their cosignatures beside them.

After a new checkpoint commits, a task (`audit.tasks.request_cosignatures`) sends it to every witness of
PAGETRAIL_WITNESSES with a consistency proof from the size that witness last cosigned here (or the size its 409
names). Appends never wait: the checkpoint is signed and served at once, and its cosignatures join it as witnesses
answer (`cosigned_note`). A witness that refuses it (it holds another history, or another size than any this log
signed) opens a `witness_refused` alert at once; fewer than PAGETRAIL_WITNESS_QUORUM cosignatures once
PAGETRAIL_WITNESS_TRIES tries are spent (a one-off schedule with backoff between them) open `witness_quorum`.
"""

import logging
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import requests
from django.conf import settings
from django.core import checks
from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.urls import reverse
from django.utils import timezone

from audit.ledger import tlog
from audit.models import Alert, LogCheckpoint, LogCosignature
from audit.verifier import cosignature, notes, witness_protocol
from core import broker, one_off
from core.retry import backoff_delay

TIMEOUT = (5, 30)  # connect, read (seconds)
ROUNDS = 3  # a 409 names the witness's size: ask again from it, a bounded number of times
COSIGNED, UNAVAILABLE, SUPERSEDED = "cosigned", "unavailable", "superseded"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Witness:
    """One entry of PAGETRAIL_WITNESSES: our name for it, its submission prefix, the keys it cosigns with."""

    name: str
    url: str
    keys: list[cosignature.VerifierKey]


class WitnessUnavailable(Exception):
    """No answer worth keeping now (network, 5xx, 429, a garbled answer): try again later."""


class WitnessRefused(Exception):
    """The witness will not cosign this checkpoint: `code` says why, stably."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class Superseded(Exception):
    """The witness already holds a later checkpoint of this log: this one needs no cosignature from it."""


def configured() -> list[Witness]:
    """The witnesses of PAGETRAIL_WITNESSES; ValueError naming the first entry that is not one."""
    found = []
    for entry in settings.PAGETRAIL_WITNESSES:
        if len(entry) < 3 or not entry[1].startswith(("http://", "https://")):
            raise ValueError(f"{' '.join(entry)[:80]!r} is not 'NAME URL VKEY [VKEY ...]'")
        keys = [cosignature.parse_vkey(vkey) for vkey in entry[2:]]
        if any(key.kind == cosignature.ED25519_NOTE for key in keys):
            raise ValueError(f"witness {entry[0]}: a verifier key of type 0x01 signs notes, not cosignatures")
        found.append(Witness(entry[0], entry[1].rstrip("/"), keys))
    if len({w.name for w in found}) != len(found):
        raise ValueError("two witnesses share a name")
    return found


@checks.register()
def witnesses_configured(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A malformed PAGETRAIL_WITNESSES, or a quorum it cannot meet, refuses to start."""
    try:
        count = len(configured())
    except (ValueError, cosignature.KeyFormatError) as exc:
        return [checks.Error(f"PAGETRAIL_WITNESSES: {exc}.", id="audit.E010")]
    if count and not 1 <= settings.PAGETRAIL_WITNESS_QUORUM <= count:
        message = f"PAGETRAIL_WITNESS_QUORUM is {settings.PAGETRAIL_WITNESS_QUORUM}, with {count} witnesses configured."
        return [checks.Error(message, hint="Set a quorum between 1 and the number of witnesses.", id="audit.E011")]
    return []


def after_checkpoint(checkpoint: LogCheckpoint) -> None:
    """Ask the witnesses once the new checkpoint has committed (never inside the append's transaction)."""
    if settings.PAGETRAIL_WITNESSES:
        transaction.on_commit(lambda: broker.enqueue("audit.tasks.request_cosignatures", checkpoint.pk, 1))


def cosigned_note(checkpoint: LogCheckpoint) -> str:
    """The checkpoint's note with its witnesses' cosignature lines after its own signature."""
    return checkpoint.note + "".join(line + "\n" for line in checkpoint.cosignatures.values_list("line", flat=True))


def cosigned_covering(size: int) -> LogCheckpoint | None:
    """The newest checkpoint of at least `size` leaves that PAGETRAIL_WITNESS_QUORUM witnesses have cosigned (None
    without witnesses, or before they answer): an evidence package prefers it to a newer one nobody cosigned yet."""
    if not settings.PAGETRAIL_WITNESSES:
        return None
    cosigned = LogCheckpoint.objects.filter(tree_size__gte=size).annotate(
        witnesses=Count("cosignatures__witness", distinct=True)
    )
    return cosigned.filter(witnesses__gte=settings.PAGETRAIL_WITNESS_QUORUM).order_by("-tree_size").first()


def package_cosignatures(checkpoint: LogCheckpoint) -> list[dict]:
    """What an evidence package says of each cosignature kept for `checkpoint`: the witness, its key and the time
    the cosignature states (the lines themselves travel in the cosigned note)."""
    configured_keys = {
        key.key_id.hex(): key.vkey for entry in settings.PAGETRAIL_WITNESSES for key in _keys_of(entry[2:])
    }
    return [
        {
            "witness": row.witness,
            "name": cosignature.line_key(row.line)[0],
            "key_id": row.key_id,
            "vkey": configured_keys.get(row.key_id),
            "signed_at": row.signed_at.astimezone(UTC).isoformat(),
        }
        for row in checkpoint.cosignatures.all()
    ]


def _keys_of(vkeys: list[str]) -> list[cosignature.VerifierKey]:
    try:
        return [cosignature.parse_vkey(vkey) for vkey in vkeys]
    except cosignature.KeyFormatError:  # refused at start (audit.E010): nothing to name
        return []


def request_cosignatures(
    checkpoint_id: int, attempt: int = 1, session: requests.Session | None = None, rng: random.Random | None = None
) -> dict[str, str]:
    """One round: each witness that has not cosigned the checkpoint is asked. {witness: outcome}."""
    checkpoint = LogCheckpoint.objects.get(pk=checkpoint_id)
    session = session or requests.Session()
    outcomes = {w.name: _ask_and_keep(w, checkpoint, session) for w in configured()}
    cosigned = sum(outcome == COSIGNED for outcome in outcomes.values())
    newer = LogCheckpoint.objects.filter(tree_size__gt=checkpoint.tree_size).exists()
    if cosigned >= settings.PAGETRAIL_WITNESS_QUORUM or newer:  # a newer checkpoint's own task asks for it
        return outcomes
    if UNAVAILABLE in outcomes.values() and attempt < settings.PAGETRAIL_WITNESS_TRIES:
        _retry(checkpoint.pk, attempt + 1, backoff_delay(attempt, 5, 600, rng))
        return outcomes
    _alert(Alert.Kind.WITNESS_QUORUM, checkpoint, _below_quorum(checkpoint, cosigned, outcomes, attempt))
    return outcomes


def ask(witness: Witness, checkpoint: LogCheckpoint, session: requests.Session) -> list[str]:
    """The witness's verified cosignature lines of `checkpoint`; WitnessUnavailable, WitnessRefused, Superseded."""
    size, old = checkpoint.tree_size, min(last_cosigned_size(witness.name), checkpoint.tree_size)
    for _ in range(ROUNDS):
        answer = _post(witness, witness_protocol.request_body(old, _proof(old, size), checkpoint.note), session)
        if answer.status_code != 409:
            return _cosignatures(witness, checkpoint, answer)
        held = _size_held(answer)
        if held > size:
            if LogCheckpoint.objects.filter(tree_size=held).exists():
                raise Superseded()
            raise WitnessRefused(
                "witness_ahead",
                f"it holds a checkpoint of {held} leaves, more than this log's {size}, and this log has no checkpoint "
                "of that size: records were removed, or the witness was shown another log",
            )
        old = held
    raise WitnessUnavailable(f"it answered 409 {ROUNDS} times in a row")


def last_cosigned_size(name: str) -> int:
    """The largest checkpoint this witness cosigned here (0 for none): where its next consistency proof starts."""
    return LogCosignature.objects.filter(witness=name).aggregate(size=Max("checkpoint__tree_size"))["size"] or 0


def _ask_and_keep(witness: Witness, checkpoint: LogCheckpoint, session: requests.Session) -> str:
    if checkpoint.cosignatures.filter(witness=witness.name).exists():
        return COSIGNED  # a redelivered task, or an earlier try
    try:
        lines = ask(witness, checkpoint, session)
    except WitnessUnavailable as exc:
        log.warning("witness %s did not cosign the checkpoint at %s: %s", witness.name, checkpoint.tree_size, exc)
        return UNAVAILABLE
    except Superseded:
        return SUPERSEDED
    except WitnessRefused as exc:
        message = (
            f"Witness {witness.name} refused the log checkpoint at {checkpoint.tree_size} leaves ({exc.code}): {exc}."
        )
        _alert(Alert.Kind.WITNESS_REFUSED, checkpoint, message, witness.name)
        return f"refused: {exc.code}"
    for line in lines:
        _keep(witness, checkpoint, line)
    return COSIGNED


def _post(witness: Witness, body: bytes, session: requests.Session) -> requests.Response:
    try:
        answer = session.post(f"{witness.url}/add-checkpoint", data=body, timeout=TIMEOUT)
    except requests.RequestException as exc:
        raise WitnessUnavailable(type(exc).__name__) from exc
    if answer.status_code >= 500 or answer.status_code == 429:
        raise WitnessUnavailable(f"HTTP {answer.status_code}")
    return answer


def _proof(old: int, size: int) -> list[bytes]:
    return tlog.tree(size, firsts=[old]).consistency_proof(old) if 0 < old < size else []


def _size_held(answer: requests.Response) -> int:
    try:
        return witness_protocol.size_of_conflict(answer.content)
    except ValueError as exc:
        raise WitnessUnavailable(str(exc)) from exc


def _cosignatures(witness: Witness, checkpoint: LogCheckpoint, answer: requests.Response) -> list[str]:
    if answer.status_code != 200:
        code = answer.text.partition(":")[0].strip()[:40] or f"http_{answer.status_code}"
        raise WitnessRefused(code, f"HTTP {answer.status_code}: {answer.text.strip()[:300]}")
    text, lines = notes.split(checkpoint.note)[0], answer.text.splitlines()
    try:
        verified = cosignature.verified_by(text, lines, witness.keys)
    except notes.NoteError as exc:
        raise WitnessRefused("bad_cosignature", str(exc)) from exc
    if not verified:
        raise WitnessRefused("no_cosignature", "its answer holds no cosignature by the keys configured for it")
    return [line for line in lines if any(key.matches(line) for key in verified)]


def _keep(witness: Witness, checkpoint: LogCheckpoint, line: str) -> None:
    key_id = next(key.key_id.hex() for key in witness.keys if key.matches(line))
    signed_at = datetime.fromtimestamp(cosignature.timestamp_of(line), UTC)
    try:
        with transaction.atomic():
            LogCosignature.objects.create(
                checkpoint=checkpoint, witness=witness.name, key_id=key_id, line=line, signed_at=signed_at
            )
    except IntegrityError:  # a concurrent try kept this key's cosignature first
        pass


def _below_quorum(checkpoint: LogCheckpoint, cosigned: int, outcomes: dict[str, str], attempt: int) -> str:
    said = "; ".join(f"{name}: {outcome}" for name, outcome in sorted(outcomes.items()))
    return (
        f"The log checkpoint at {checkpoint.tree_size} leaves has {cosigned} witness cosignature(s) after {attempt} "
        f"tries, fewer than the quorum of {settings.PAGETRAIL_WITNESS_QUORUM} ({said})."
    )


def _alert(kind: str, checkpoint: LogCheckpoint, message: str, witness: str = "") -> None:
    from audit.operations.alerts import raise_alert

    link = reverse("admin:audit_logcheckpoint_change", args=[checkpoint.pk])
    raise_alert(kind, f"{kind}-{witness}-{checkpoint.tree_size}", message, link)
    log.error(message)


def _retry(checkpoint_id: int, attempt: int, delay: float) -> None:
    when = timezone.now() + timedelta(seconds=delay)
    one_off.run_at(
        "audit.tasks.request_cosignatures",
        checkpoint_id,
        attempt,
        name=f"cosignatures-{checkpoint_id}-{attempt}",
        when=when,
    )
