"""Canonical JSON (the bytes every signature covers) and the times signed documents give themselves."""

from __future__ import annotations

import datetime
import json


def canonical_bytes(document: object) -> bytes:
    """Stable key order, no whitespace, ASCII only: the same document always gives the same bytes."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode(
        "ascii"
    )


def parse_time(text: object) -> datetime.datetime | None:
    """An aware datetime from an ISO 8601 time with its zone ("Z" or an offset); None otherwise."""
    try:
        at = datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None
