"""Legal holds in the retention policy admin: placing or lifting one asks for its reason first, and a hold's
second person confirms it from its own page (audit.retention.hold_confirmation)."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path

from audit.models import RetentionPolicy
from audit.retention import enforcement as retention
from audit.retention import hold_confirmation
from audit.retention.approval import PERMISSION
from audit.retention.enforcement import Refused

REASON_TEMPLATE = "admin/audit/retentionpolicy/legal_hold_reason.html"
CONFIRM_TEMPLATE = "admin/audit/retentionpolicy/confirm_hold.html"


class LegalHoldActions(admin.ModelAdmin):
    """Mixed into RetentionPolicyAdmin: the two hold actions and the confirmation page."""

    def get_urls(self):
        return [
            path(
                "<int:policy_id>/confirm-hold/",
                self.admin_site.admin_view(self.confirm_hold_view),
                name="audit_retentionpolicy_confirm_hold",
            ),
            *super().get_urls(),
        ]

    @admin.action(
        description="Place a legal hold (in effect at once; a second person confirms it)", permissions=["add"]
    )
    def place_legal_hold(self, request, queryset):
        return self._with_reason(request, queryset, on=True)

    @admin.action(description="Lift the legal hold (a draft, for another person to approve)", permissions=["add"])
    def lift_legal_hold(self, request, queryset):
        return self._with_reason(request, queryset, on=False)

    def _with_reason(self, request, queryset, on: bool):
        """First the page that asks why; its POST (with `post`) does it for each selected policy name."""
        names = sorted(set(queryset.values_list("name", flat=True)))
        if "post" not in request.POST:
            return self._reason_page(request, queryset, names, on, refused=None)
        for name in names:
            try:
                changed = retention.set_legal_hold(
                    name, on, request.user.get_username(), request.POST.get("reason", "")
                )
            except Refused as exc:
                if exc.code == "hold_reason_missing":
                    return self._reason_page(request, queryset, names, on, refused=exc)
                self.message_user(request, str(exc), messages.ERROR)
                continue
            if on:
                self.message_user(
                    request,
                    f"{changed} is in force: deletions under {name} stop now. "
                    "Another person with the approve permission confirms it.",
                )
            else:
                self.message_user(
                    request, f"{changed} lifts the hold once another person approves it.", messages.WARNING
                )
        return None

    def _reason_page(self, request, queryset, names, on: bool, refused: Refused | None):
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": ("Place a legal hold on " if on else "Lift the legal hold of ") + ", ".join(names),
            "placing": on,
            "action": "place_legal_hold" if on else "lift_legal_hold",
            "selected": [str(pk) for pk in queryset.values_list("pk", flat=True)],
            "refused": refused,
            "reason": request.POST.get("reason", ""),
        }
        return TemplateResponse(request, REASON_TEMPLATE, context)

    def confirm_hold_view(self, request, policy_id):
        """GET: the hold, who placed it and why. POST: confirm it as a second person."""
        if not request.user.has_perm(PERMISSION):
            raise PermissionDenied
        hold = get_object_or_404(RetentionPolicy, pk=policy_id)
        if request.method == "POST":
            try:
                hold_confirmation.confirm(hold, request.user)
            except Refused as exc:
                self.message_user(request, str(exc), messages.ERROR)
                return redirect("admin:audit_retentionpolicy_confirm_hold", hold.pk)
            self.message_user(request, f"Confirmed the legal hold {hold}: {hold.people()}.")
            return redirect("admin:audit_retentionpolicy_changelist")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Confirm the legal hold {hold}",
            "hold": hold,
            "refused": hold_confirmation.refusal(hold, request.user),
        }
        return TemplateResponse(request, CONFIRM_TEMPLATE, context)
