"""Cursor pages of a list newest first by id: a cursor names the last row a page showed, so rows that arrive
between two pages neither repeat in the next one nor push a row out of it (as an offset would)."""

import base64
import binascii
import re

from django.db.models import QuerySet

PREFIX = "id:"  # opaque to clients; the prefix lets its form change while old cursors are still read
ROW_ID = re.compile(r"[1-9][0-9]{0,18}")


class BadCursor(ValueError):
    """A cursor this API did not write (cut, edited, or from another list's form)."""


def cursor_after(pk: int) -> str:
    return base64.urlsafe_b64encode(f"{PREFIX}{pk}".encode()).decode().rstrip("=")


def row_of(cursor: str) -> int:
    """The id of the row a cursor names, the last one its page showed."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise BadCursor(cursor) from exc
    digits = text.removeprefix(PREFIX)
    if not text.startswith(PREFIX) or not ROW_ID.fullmatch(digits) or int(digits) > 2**63 - 1:
        raise BadCursor(cursor)
    return int(digits)


def newest_first(rows: QuerySet, limit: int, cursor: str = "", offset: int = 0) -> tuple[list, str | None]:
    """A page of `limit` rows after the cursor's (or, deprecated, after `offset` rows), and the cursor of the next
    page: None when this one is the last."""
    if cursor:
        rows = rows.filter(pk__lt=row_of(cursor))
    page = list(rows.order_by("-pk")[offset : offset + limit + 1])  # one more: is there a next page?
    return page[:limit], cursor_after(page[limit - 1].pk) if len(page) > limit else None
