"""How the portal writes values for people: durations, sizes, timestamps, page lists, short ids."""

from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.html import format_html

SHORT_ID = 12


def duration(value: timedelta | float | None) -> str:
    """`0:00:00.069153` reads as "69 ms"; 75 s as "1 min 15 s"; None as "–"."""
    if value is None:
        return "–"
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{round(seconds)} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def size(n: int | None) -> str:
    """Bytes as a person reads them: 1536 -> "1.5 KB" (powers of 1024, as the admin's filesizeformat)."""
    if n is None:
        return "–"
    value = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"  # pragma: no cover (the loop returns)


def timestamp(at: datetime | None) -> str:
    """To the second, in the portal's time zone (PAGETRAIL_TIME_ZONE, UTC unless configured), named."""
    return timezone.localtime(at).strftime("%Y-%m-%d %H:%M:%S %Z") if at else "–"


def page_ranges(pages) -> str:
    """[4, 9, 10, 11, 12] -> "4, 9-12"."""
    runs: list[list[int]] = []
    for n in sorted(set(pages or ())):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def short_id(value: str) -> str:
    """The first 12 characters, the whole id on hover (title) and in the copy buffer (a selectable <code>)."""
    if not value:
        return "–"
    return format_html('<code class="short-id" title="{}">{}</code>', value, value[:SHORT_ID])


def named(shown: str, value: str) -> str:
    """A name a person reads, with the id or stored name it stands for on hover and in the copy buffer (a click, as
    short_id): `claim.pdf, page 3 (index 0)` for `64c5bc…/p00003-000.jpg`."""
    return format_html('<code class="short-id named" title="{}">{}</code>', value, shown) if value else shown


def details(data) -> str:
    """An activity record's before/after dict as "key: value; key: value" (not a Python repr)."""
    if not data:
        return ""
    if not isinstance(data, dict):
        return str(data)
    return "; ".join(f"{key.replace('_', ' ')}: {_value(value)}" for key, value in data.items())


def _value(value) -> str:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return page_ranges(value) if value else "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
