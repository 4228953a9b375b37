"""Admin for retention policies: drafting a version, approving someone else's, placing a legal hold."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Max, OuterRef, Subquery
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.text import capfirst

from audit.admin.exports import ExportableList
from audit.admin.holds import LegalHoldActions
from audit.admin.people import activity_of
from audit.models import RetentionPolicy
from audit.retention import approval as retention_approval
from audit.retention import due_files as retention_due_files
from audit.retention import enforcement as retention
from audit.retention import policies as retention_policies
from audit.retention.enforcement import Refused
from core import display


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(LegalHoldActions, ExportableList, admin.ModelAdmin):
    """Adding is the only way to change a policy: each save is a new draft version, in force once someone
    else approves it; old versions stay. A legal hold is in force at once and confirmed by someone else."""

    list_display = (
        "name",
        "version",
        "standing",
        "is_default",
        "input_days",
        "output_days",
        "manifest_days",
        "legal_hold",
        "contract_owner",
        "people",
        "took_effect",
    )
    list_filter = ("name", "status", "legal_hold", "is_default")
    export_fields = (
        "id",
        "name",
        "version",
        "status",
        *retention.POLICY_FIELDS,
        "created_by",
        "created_at",
        "approved_by",
        "approved_at",
    )
    fields = ("name",) + retention.POLICY_FIELDS
    actions = ["place_legal_hold", "lift_legal_hold"]
    change_form_template = "admin/audit/retentionpolicy/change_form.html"

    def get_queryset(self, request):
        newest = retention_policies.effective().filter(name=OuterRef("name")).values("name").annotate(v=Max("version"))
        return super().get_queryset(request).annotate(in_force_version=Subquery(newest.values("v")))

    shown = (
        "version",
        "standing",
        "status",
        "people",
        "created_at",
        "approved_at",
        "approval",
        "activity",
    )

    def get_fields(self, request, obj=None):
        return (*self.fields, *self._shown_to(request)) if obj else self.fields

    def get_readonly_fields(self, request, obj=None):
        return (*self.fields, *self._shown_to(request)) if obj else ()

    def _shown_to(self, request):
        """The approval link only for those who may follow it (others would meet a refusal)."""
        if request.user.has_perm(retention_approval.PERMISSION):
            return self.shown
        return tuple(f for f in self.shown if f != "approval")

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """A saved version is read-only; *New version* opens the add form filled in from it."""
        policy = RetentionPolicy.objects.filter(pk=object_id).first()
        extra = dict(extra_context or {})
        if policy and self.has_add_permission(request):
            values = {"name": policy.name, **{f: _initial(getattr(policy, f)) for f in retention.POLICY_FIELDS}}
            values = {field: value for field, value in values.items() if value}
            extra["new_version_url"] = f"{reverse('admin:audit_retentionpolicy_add')}?{urlencode(values)}"
        return super().change_view(request, object_id, form_url, extra)

    def get_urls(self):
        return [
            path(
                "<int:policy_id>/approve/",
                self.admin_site.admin_view(self.approve_view),
                name="audit_retentionpolicy_approve",
            ),
            path(
                "<int:policy_id>/approve/would-delete.csv",
                self.admin_site.admin_view(self.would_delete_csv),
                name="audit_retentionpolicy_would_delete_csv",
            ),
            *super().get_urls(),
        ]

    @admin.display(description="standing")
    def standing(self, policy):
        """Draft, in force or superseded; a draft older than the version in force can no longer be approved."""
        newest = policy.in_force_version or 0
        if policy.status == RetentionPolicy.Status.DRAFT:
            return "draft" if policy.version > newest else "draft, out of date"
        return "in force" if policy.version == newest else "superseded"

    @admin.display(description="who")
    def people(self, policy):
        """In words: a hold is placed and confirmed, a change drafted and approved (never "created by X,
        approved by X" for a hold one person placed)."""
        return policy.people()

    @admin.display(description="in effect from")
    def took_effect(self, policy):
        return display.timestamp(policy.took_effect_at)

    @admin.display(description="approval")
    def approval(self, policy):
        if policy.status == RetentionPolicy.Status.HOLD_PLACED:
            return format_html(
                '<a href="{}" id="confirm-hold-link">Confirm this legal hold (as the second person)</a>',
                reverse("admin:audit_retentionpolicy_confirm_hold", args=[policy.pk]),
            )
        if policy.status != RetentionPolicy.Status.DRAFT:
            return policy.get_status_display()
        return format_html(
            '<a href="{}" id="approve-link">Review what it would delete, and approve</a>',
            reverse("admin:audit_retentionpolicy_approve", args=[policy.pk]),
        )

    def activity(self, policy):
        return activity_of(policy)

    def save_model(self, request, obj, form, change):
        values = {f: form.cleaned_data[f] for f in retention.POLICY_FIELDS}
        created = retention.new_version(obj.name, request.user.get_username(), **values)
        obj.pk, obj.version = created.pk, created.version
        self.message_user(
            request,
            f"{created} is a draft: it takes effect when another person with the approve permission approves it.",
            messages.WARNING,
        )

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def approve_view(self, request, policy_id):
        """GET: the draft beside the version in force and what it would delete. POST: approve it."""
        if not request.user.has_perm(retention_approval.PERMISSION):
            raise PermissionDenied
        draft = get_object_or_404(RetentionPolicy, pk=policy_id)
        if request.method == "POST":
            try:
                retention_approval.approve(draft, request.user, seen_files=_int(request.POST.get("seen_files")))
            except Refused as exc:
                self.message_user(request, str(exc), messages.ERROR)
                return redirect("admin:audit_retentionpolicy_approve", draft.pk)
            self.message_user(request, f"Approved {draft}: it is in force from now.")
            return redirect("admin:audit_retentionpolicy_changelist")
        found = retention_approval.review(draft, request.user)
        rows = [(_label(f), getattr(found.current, f, ""), getattr(draft, f)) for f in retention.POLICY_FIELDS]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "review": found,
            "rows": rows,
            "due_files": retention_due_files.page(draft, request.GET.get("page")),
            "title": f"Approve {draft}",
        }
        return TemplateResponse(request, "admin/audit/retentionpolicy/approve.html", context)

    def would_delete_csv(self, request, policy_id):
        """Every file approving the draft would delete, as CSV: for the approver, with no other permission."""
        if not request.user.has_perm(retention_approval.PERMISSION):
            raise PermissionDenied
        return retention_due_files.csv_response(get_object_or_404(RetentionPolicy, pk=policy_id), request.user)


def _initial(value) -> str:
    """A value as the add form reads it from the query string (Django's admin takes initial values from GET)."""
    if isinstance(value, bool):
        return "on" if value else ""
    return "" if value is None else str(value)


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _label(name: str) -> str:
    """A policy setting by the name the form gives it (Input days), not its column's (input_days)."""
    field = RetentionPolicy._meta.get_field(name)
    return capfirst(str(field.verbose_name)) if isinstance(field, models.Field) else name
