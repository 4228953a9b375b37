"""The project's admin registrations: the user list with second factors, and the pages that need both apps.

Second factors of other people, from the user list: issue an enrolment code, reset a lost device.
Superusers only, and never for themselves: a code is what binds a second factor where a password is not enough,
so the person it is for cannot be the one who issues it. Both actions are activity (portal/enrolment.py).
"""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.shortcuts import render

from audit.admin.bundles import BundleVerifiedAdmin
from audit.admin.jobs import JobStoryAdmin
from extraction.models import Bundle, Job

from . import enrolment
from .models import ENROLMENT_CODE_LIFETIME

User = get_user_model()


class SecondFactorUserAdmin(UserAdmin):
    actions = ["issue_enrolment_codes", "reset_second_factors"]

    def has_second_factors_permission(self, request) -> bool:
        return request.user.is_superuser

    def others(self, request, queryset):
        if queryset.filter(pk=request.user.pk).exists():
            messages.warning(request, "Not for yourself: another administrator does that for you.")
        return queryset.exclude(pk=request.user.pk)

    @admin.action(description="Issue a second-factor enrolment code", permissions=["second_factors"])
    def issue_enrolment_codes(self, request, queryset):
        issued = [
            (user, enrolment.issue_code(user, request.user.get_username())) for user in self.others(request, queryset)
        ]
        if not issued:
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Enrolment codes",
            "issued": issued,
            "hours": int(ENROLMENT_CODE_LIFETIME.total_seconds() // 3600),
        }
        response = render(request, "portal/enrolment_codes.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(
        description="Reset second factor (remove authenticator and recovery codes)", permissions=["second_factors"]
    )
    def reset_second_factors(self, request, queryset):
        users = list(self.others(request, queryset))
        removed = sum(enrolment.reset_devices(user, request.user.get_username()) for user in users)
        if users:
            messages.success(request, f"Removed {removed} device(s) of {len(users)} user(s): they enrol again.")


admin.site.unregister(User)
admin.site.register(User, SecondFactorUserAdmin)
# Extraction's JobAdmin with audit's story of the job: needs both apps, so neither registers it.
admin.site.register(Job, JobStoryAdmin)
admin.site.register(Bundle, BundleVerifiedAdmin)  # with the latest verification of its evidence (audit's)
