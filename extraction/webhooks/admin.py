"""Admin for webhook events: each event and its tries, read-only, and *Replay* (the same event again)."""

from django.contrib import admin

from core.admin_base import ReadOnlyAdmin, ReadOnlyInline

from . import delivery
from .events import WebhookAttempt, WebhookEvent


class AttemptInline(ReadOnlyInline):
    model = WebhookAttempt
    fields = ("number", "at", "url", "status_code", "retry_after_s", "delivered", "error")
    readonly_fields = fields


@admin.register(WebhookEvent)
class WebhookEventAdmin(ReadOnlyAdmin):
    """Every event sent to a service account's webhook, delivered or not; replay one the receiver lost."""

    list_display = ("webhook_id", "type", "account", "state", "tries", "occurred_at", "delivered_at", "next_attempt_at")
    list_filter = ("account", "type", "state")
    list_select_related = ("account",)
    search_fields = ("=webhook_id", "account__name")
    date_hierarchy = "occurred_at"
    fields = (
        "webhook_id",
        "type",
        "account",
        "job",
        "submission",
        "state",
        "tries",
        "replays",
        "occurred_at",
        "next_attempt_at",
        "delivered_at",
        "body",
    )
    readonly_fields = fields
    inlines = [AttemptInline]
    actions = ["replay"]

    @admin.action(description="Replay the selected events (same id and body, signed anew)", permissions=["replay"])
    def replay(self, request, queryset):
        done = sum(delivery.replay(event) for event in queryset)
        self.message_user(request, f"Queued {done} event(s) for delivery again.")

    def has_replay_permission(self, request):
        return request.user.has_perm("extraction.replay_webhookevent")
