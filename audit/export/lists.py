"""A list as CSV or JSON, streamed: the rows an admin list shows, with its filters and search, for reading
outside the portal.

Rows are read with `values_list(...).iterator(chunk_size=...)`: one query (a server-side cursor on PostgreSQL)
and a bounded batch in memory, however long the list. Each export is itself an activity event, signed and
appended to the ledger (`record_export`), so what left the portal, and with which filters, is on record.

Cells a spreadsheet would run as a formula (text starting with = + - @, a tab or a carriage return) get a
leading apostrophe in CSV (OWASP's advice for CSV injection); JSON keeps every value as it is stored.
Times are ISO 8601 with their offset, in the portal's time zone.
"""

import csv
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone

from audit.ledger import activity_records

FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json"}
CHUNK_ROWS = 2000  # rows per fetch: memory stays flat and a 100k-row list is 50 round trips, not 100k
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralised(text: str) -> str:
    """Text a spreadsheet would read as a formula, made plain text with a leading apostrophe."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def plain(value):
    """A stored value as JSON carries it: times in ISO 8601 with offset, decimals as text."""
    if isinstance(value, datetime):
        return timezone.localtime(value).isoformat() if timezone.is_aware(value) else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def csv_cell(value) -> str | int | float:
    """One CSV cell: numbers as they are, empty for none, structures as JSON, text neutralised."""
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return value
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return neutralised(value)


class _Line:
    """csv.writer's file: hands back each line it writes, so a row is encoded as it streams."""

    def write(self, line: str) -> str:
        return line


def csv_lines(columns: Sequence[str], rows: Iterable[Sequence]) -> Iterator[bytes]:
    writer = csv.writer(_Line())
    yield "\ufeff".encode()  # spreadsheets read the file as UTF-8 only with the byte-order mark
    yield writer.writerow(columns).encode()
    for row in rows:
        yield writer.writerow([csv_cell(value) for value in row]).encode()


def json_chunks(columns: Sequence[str], rows: Iterable[Sequence]) -> Iterator[bytes]:
    """One JSON array of objects keyed by column, written a row at a time."""
    yield b"["
    separator = b"\n"
    for row in rows:
        yield separator + json.dumps(dict(zip(columns, map(plain, row), strict=True)), ensure_ascii=False).encode()
        separator = b",\n"
    yield b"\n]\n"


def rows_of(queryset: QuerySet, columns: Sequence[str]) -> Iterator[tuple]:
    return queryset.values_list(*columns).iterator(chunk_size=CHUNK_ROWS)


def response(queryset: QuerySet, columns: Sequence[str], fmt: str, name: str, at: datetime) -> StreamingHttpResponse:
    """The streamed download of `queryset`'s `columns` as `fmt` ("csv" or "json")."""
    write = csv_lines if fmt == "csv" else json_chunks
    streamed = StreamingHttpResponse(write(columns, rows_of(queryset, columns)), content_type=FORMATS[fmt])
    stamp = timezone.localtime(at).strftime("%Y%m%dT%H%M%S%z")
    streamed["Content-Disposition"] = f'attachment; filename="pagetrail-{name}-{stamp}.{fmt}"'
    streamed["Cache-Control"] = "no-store"
    return streamed


@dataclass(frozen=True)
class ExportedList:
    """What an export's activity event is about: a list (its model's label), not one row."""

    pk: str
    activity_type = "list"


def record_export(actor: str, label: str, fmt: str, query: str, rows: int, at: datetime) -> None:
    """The export in the activity record: which list, which filters and search, how many rows, by whom."""
    activity_records.record(
        actor, "list_exported", ExportedList(label), after={"format": fmt, "query": query, "rows": rows}, at=at
    )
