"""A date filter with a range of one's own, for every list with a date: Django's links (today, past 7 days, this
month, this year) and two date fields, from one day to another, both days included, in the portal's time zone."""

import datetime

from django.contrib import admin, messages
from django.utils import timezone

BAD_DATE = "bad_date"
MIN_DAY, MAX_DAY = datetime.date(2, 1, 1), datetime.date(9998, 12, 31)


class DateRangeFilter(admin.DateFieldListFilter):
    template = "admin/filters/date_range.html"

    def __init__(self, field, request, params, model, model_admin, field_path):
        self.since_param, self.until_param = f"{field_path}__from", f"{field_path}__to"
        self.request = request
        self.kept: list[tuple[str, str]] = []
        super().__init__(field, request, params, model, model_admin, field_path)
        self.since, self.until = self._day(self.since_param), self._day(self.until_param)

    def expected_parameters(self):
        return [*super().expected_parameters(), self.since_param, self.until_param]

    def _day(self, param: str) -> datetime.date | None:
        """The day asked for, taken out of Django's own lookups; a day that is not one is ignored, and said."""
        given = self.used_parameters.pop(param, None)
        value = str((given[-1] if isinstance(given, list) else given) or "")
        if not value:
            return None
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            messages.warning(self.request, f"Ignored the date {value[:40]!r} ({BAD_DATE}): write a day as YYYY-MM-DD.")
            return None

    def queryset(self, request, queryset):
        queryset = super().queryset(request, queryset)
        bounds = {"gte": _start_of(self.since), "lt": _start_of(self.until, days_after=1)}  # the last day whole
        return queryset.filter(**{f"{self.field_path}__{op}": at for op, at in bounds.items() if at})

    def choices(self, changelist):
        # The form sends only its own fields: every other filter, the search and the order go with it, hidden.
        mine = {self.since_param, self.until_param}
        self.kept = [(k, v) for k, v in changelist.params.items() if k not in mine and not isinstance(v, list)]
        yield from super().choices(changelist)

    @property
    def since_value(self) -> str:
        return self.since.isoformat() if self.since else ""

    @property
    def until_value(self) -> str:
        return self.until.isoformat() if self.until else ""


def _start_of(day: datetime.date | None, days_after: int = 0) -> datetime.datetime | None:
    """Midnight starting `day` (plus `days_after`) in the portal's time zone; None for no day, or one at the
    calendar's ends, which no row is outside of and which would overflow once moved to UTC."""
    if day is None or not MIN_DAY <= day <= MAX_DAY:
        return None
    return timezone.make_aware(datetime.datetime.combine(day + datetime.timedelta(days_after), datetime.time.min))
