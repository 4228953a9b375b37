"""The files a retention policy version would delete, for the person who approves it: a page at a time on the
approval page, or all of them as CSV.

Read from `enforcement.files_due`, the next run's own plan and decisions made dry, so the approver reads exactly
what enforcement would delete. Only the approve permission is needed: approving blind is the thing to avoid, and
an approver holds no other view of bundles.
"""

import csv
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Page, Paginator
from django.http import StreamingHttpResponse

from audit.ledger import activity_records
from audit.models import RetentionEvent, RetentionPolicy
from audit.retention.enforcement import DueFile, files_due
from core import display

PER_PAGE = 100
COLUMNS = ["bundle", "case label", "correlation id", "what", "file", "size (bytes)", "received", "extracted"]
# A spreadsheet runs a cell that starts with one of these as a formula; a file name is user input.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class Row:
    """One file to be deleted, in the words an approver reads."""

    bundle: str
    case_label: str
    correlation_id: str
    what: str
    file: str
    size: int
    received: datetime
    extracted: datetime | None

    @property
    def size_shown(self) -> str:
        return display.size(self.size)


def row_of(due: DueFile) -> Row:
    bundle = due.bundle
    return Row(
        bundle=bundle.original_filename or "(no name)",
        case_label=bundle.case_label,
        correlation_id=bundle.correlation_id,
        what=RetentionEvent.What(due.what).label,
        file=_file_name(due),
        size=due.size,
        received=bundle.created_at,
        extracted=due.manifest.created_at if due.manifest else None,
    )


def _file_name(due: DueFile) -> str:
    """The name a person knows: the uploaded file's, the manifest's number, or the extracted image's own name
    (stored names are hashes and ids)."""
    if due.what == RetentionEvent.What.INPUT:
        return due.bundle.original_filename or due.name
    if due.what == RetentionEvent.What.MANIFEST_FILE and due.manifest is not None:
        return f"manifest-{due.manifest.sequence}.json"
    return due.name.rsplit("/", 1)[-1]


def page(draft: RetentionPolicy, number, at=None) -> Page:
    """One page of the files approving `draft` would delete (a number out of range gives the nearest page)."""
    rows = [row_of(due) for due in files_due(draft, at)]
    return Paginator(rows, PER_PAGE).get_page(number)


def csv_response(draft: RetentionPolicy, user, at=None) -> StreamingHttpResponse:
    """Every file approving `draft` would delete, streamed as CSV; the export is in the activity record."""
    activity_records.record(user.get_username(), "retention_due_files_exported", draft, at=at)
    rows = (row_of(due) for due in files_due(draft, at))
    response = StreamingHttpResponse(_csv_lines(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="would-delete-{draft.name}-v{draft.version}.csv"'
    return response


def _csv_lines(rows: Iterable[Row]) -> Iterator[str]:
    line = _Line()
    writer = csv.writer(line)
    yield writer.writerow(COLUMNS)
    for r in rows:
        extracted = r.extracted.isoformat() if r.extracted else ""
        cells = [r.bundle, r.case_label, r.correlation_id, r.what, r.file, r.size, r.received.isoformat(), extracted]
        yield writer.writerow([_safe(c) for c in cells])


def _safe(cell):
    return f"'{cell}" if isinstance(cell, str) and cell.startswith(FORMULA_STARTS) else cell


class _Line:
    """A csv writer's file that hands back each line instead of keeping it (for streaming)."""

    def write(self, value: str) -> str:
        return value
