"""Admin for service accounts: a token is shown once when issued, expires, is rotated with an overlap; the webhook
URL, and its signing secret shown once when issued."""

from django.contrib import admin, messages
from django.db.models import Count, Max, Q
from django.db.models.functions import Now

from core.admin_base import ReadOnlyAdmin, ReadOnlyInline

from .accounts import BundleAccess, ServiceAccount, ServiceAccountToken

VALID = Q(tokens__revoked_at__isnull=True, tokens__expires_at__gt=Now())


def show_once(request, account: ServiceAccount, token: str) -> None:
    messages.warning(request, f"Token for {account.name} (shown once): {token} - store it now.")


def show_secret_once(request, account: ServiceAccount, secret: str) -> None:
    messages.warning(request, f"Webhook signing secret for {account.name} (shown once): {secret} - store it now.")


class TokenInline(ReadOnlyInline):
    model = ServiceAccountToken
    fields = ("prefix", "created_by", "created_at", "expires_at", "revoked_at")
    readonly_fields = fields


class BundleAccessInline(ReadOnlyInline):
    """Which service accounts sent these bytes, each seeing the bundle through its own access."""

    model = BundleAccess
    verbose_name_plural = "service accounts that sent these bytes"
    fields = ("account", "job", "created_at")
    readonly_fields = fields


@admin.register(ServiceAccount)
class ServiceAccountAdmin(admin.ModelAdmin):
    """Upstream services: tokens stored only as hashes; rotate with *Issue a new token*, then revoke."""

    list_display = ("name", "valid_tokens", "last_expiry", "created_by", "created_at", "revoked_at")
    list_filter = ("revoked_at",)
    fields = ("name", "webhook_url", "webhook_signing", "created_by", "created_at", "revoked_at")
    readonly_fields = ("webhook_signing", "created_by", "created_at", "revoked_at")
    actions = ["issue_new_token", "issue_webhook_secret", "revoke"]

    def get_inlines(self, request, obj):
        return [TokenInline] if obj else []  # a new account's first token is issued when it is saved

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(n_valid=Count("tokens", filter=VALID), valid_until=Max("tokens__expires_at", filter=VALID))
        )

    @admin.display(description="valid tokens", ordering="n_valid")
    def valid_tokens(self, account):
        return account.n_valid

    @admin.display(description="valid until", ordering="valid_until")
    def last_expiry(self, account):
        return account.valid_until

    @admin.display(description="webhook signing secret")
    def webhook_signing(self, account):
        return "issued (shown once; issue a new one from the list's actions)" if account.webhook_secret else "none yet"

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user.get_username()
        super().save_model(request, obj, form, change)
        if not change:
            show_once(request, obj, obj.issue_token(by=request.user.get_username()))
        if obj.webhook_url and not obj.webhook_secret:  # the first URL: the receiver needs the secret to verify
            show_secret_once(request, obj, obj.issue_webhook_secret(by=request.user.get_username()))

    @admin.action(description="Issue a new token (the older ones stay valid for the overlap)", permissions=["change"])
    def issue_new_token(self, request, queryset):
        for account in queryset.filter(revoked_at__isnull=True):
            show_once(request, account, account.issue_token(by=request.user.get_username()))

    @admin.action(
        description="Issue a new webhook signing secret (the old one still signs beside it for the overlap)",
        permissions=["change"],
    )
    def issue_webhook_secret(self, request, queryset):
        for account in queryset.filter(revoked_at__isnull=True):
            show_secret_once(request, account, account.issue_webhook_secret(by=request.user.get_username()))

    @admin.action(description="Revoke the selected accounts (all their tokens)", permissions=["change"])
    def revoke(self, request, queryset):
        done = sum(account.revoke(by=request.user.get_username()) for account in queryset)
        self.message_user(request, f"Revoked {done} account(s).")


@admin.register(ServiceAccountToken)
class ServiceAccountTokenAdmin(ReadOnlyAdmin):
    """Every token issued; revoke one (a leaked one, or the old one once the service switched)."""

    list_display = ("prefix", "account", "created_by", "created_at", "expires_at", "revoked_at")
    list_filter = ("revoked_at", "expires_at")
    list_select_related = ("account",)
    search_fields = ("=prefix", "account__name")
    readonly_fields = ("account", "prefix", "created_by", "created_at", "expires_at", "revoked_at")
    actions = ["revoke"]

    @admin.action(description="Revoke the selected tokens now", permissions=["revoke"])
    def revoke(self, request, queryset):
        done = sum(token.revoke(by=request.user.get_username()) for token in queryset)
        self.message_user(request, f"Revoked {done} token(s).")

    def has_revoke_permission(self, request):
        return request.user.has_perm("extraction.change_serviceaccounttoken")
