from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.contrib.staticfiles.management.commands.runserver import Command as StaticFilesRunserver

from core.static_files import StaticFilesWithHeaders


class Command(StaticFilesRunserver):
    """Django's development server; the static files it serves (`--insecure`) carry the portal's security headers."""

    def get_handler(self, *args, **options):
        handler = super().get_handler(*args, **options)
        return StaticFilesWithHeaders(handler.application) if isinstance(handler, StaticFilesHandler) else handler
