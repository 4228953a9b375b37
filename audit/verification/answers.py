"""A person answering verification findings: acknowledge (seen, being looked into) or resolve, with a note,
each answer a signed activity record in the ledger. Refusals carry a stable code and a sentence."""

from dataclasses import dataclass

from django.db import transaction

from audit.ledger import activity_records
from audit.models import Finding, FindingResponse

NOTE_LIMIT = 2000


class AnswerRefused(ValueError):
    """An answer that cannot be recorded; `code` is stable, the message says why in words."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class Answered:
    changed: int  # findings this answer moved
    unchanged: int  # already acknowledged (or resolved): an answer never moves a finding back


def checked_note(note: str) -> str:
    note = (note or "").strip()
    if not note:
        raise AnswerRefused("note_required", "Write a note saying what was seen or done: an answer needs one.")
    if len(note) > NOTE_LIMIT:
        raise AnswerRefused("note_too_long", f"Keep the note under {NOTE_LIMIT} characters.")
    return note


def acknowledge(findings, by: str, note: str) -> Answered:
    return _answer(findings, by, checked_note(note), "acknowledged")


def resolve(findings, by: str, note: str) -> Answered:
    return _answer(findings, by, checked_note(note), "resolved")


def _answer(findings, by: str, note: str, status: str) -> Answered:
    changed = unchanged = 0
    for finding in findings:
        with transaction.atomic():  # the answer and its ledger record stand or fall together
            response = FindingResponse.of(finding)
            before = response.status
            mark = response.mark_resolved if status == "resolved" else response.mark_acknowledged
            if not mark(by, note):
                unchanged += 1
                continue
            after = {"status": status, "note": note, "kind": finding.kind, "run": finding.run_id}
            activity_records.record(by, f"finding_{status}", finding, before={"status": before}, after=after)
            changed += 1
    return Answered(changed, unchanged)


def answers_of(finding: Finding) -> str:
    """The finding's answer in words, for lists and pages."""
    response = finding.response if _has_response(finding) else None
    if response is None or response.status == FindingResponse.Status.OPEN:
        return "open"
    if response.status == FindingResponse.Status.RESOLVED:
        return f"resolved by {response.resolved_by}: {response.resolved_note}"
    return f"acknowledged by {response.acknowledged_by}: {response.acknowledged_note}"


def _has_response(finding: Finding) -> bool:
    try:
        finding.response  # noqa: B018  (a reverse one-to-one raises when there is none)
    except FindingResponse.DoesNotExist:
        return False
    return True
