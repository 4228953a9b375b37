"""Times in the reader's zone: each person may choose one (Account → Time zone); everyone else reads the portal's
(PAGETRAIL_TIME_ZONE). Exports and the API say the offset of every time, so nothing depends on the choice."""

import zoneinfo
from functools import cache

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache

from .models import TimeZonePreference


@cache
def zone_names() -> list[str]:
    return sorted(zoneinfo.available_timezones())


def choices() -> list[tuple[str, str]]:
    return [("", f"The portal's ({settings.TIME_ZONE})"), *((name, name) for name in zone_names())]


class TimeZoneForm(forms.Form):
    time_zone = forms.ChoiceField(
        label="Time zone",
        choices=choices,
        required=False,
        help_text="Every time in the portal is shown in this zone, with its name; exports and the API give offsets.",
    )


class UserTimeZoneMiddleware:
    """Activates the reader's zone for the request (after authentication); times then follow it everywhere."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        chosen = chosen_zone(request) if request.user.is_authenticated else ""
        if chosen:
            timezone.activate(zoneinfo.ZoneInfo(chosen))
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def chosen_zone(request) -> str:
    """One query a request, the same on every page (read afresh: a choice made in another session applies)."""
    chosen = TimeZonePreference.objects.filter(user=request.user).values_list("time_zone", flat=True).first() or ""
    return chosen if chosen in zone_names() else ""  # a zone a later tzdata dropped reads as the portal's


@never_cache
@staff_member_required
def time_zone(request):
    current = chosen_zone(request)
    form = TimeZoneForm(request.POST or None, initial={"time_zone": current})
    if request.method == "POST" and form.is_valid():
        chosen = form.cleaned_data["time_zone"]
        if chosen:
            TimeZonePreference.objects.update_or_create(user=request.user, defaults={"time_zone": chosen})
        else:
            TimeZonePreference.objects.filter(user=request.user).delete()
        messages.success(request, f"Times are now shown in {chosen or f'the portal zone ({settings.TIME_ZONE})'}.")
        return redirect("time-zone")
    context = {**admin.site.each_context(request), "title": "Time zone", "form": form, "now": timezone.now()}
    return render(request, "portal/time_zone.html", context)
