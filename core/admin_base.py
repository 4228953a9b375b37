"""The read-only admin bases shared by extraction's and audit's evidence rows."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Evidence rows: visible, never added, changed or deleted through the admin."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyInline(admin.TabularInline):
    """Rows shown on their parent's page, never added, changed or deleted there."""

    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False
