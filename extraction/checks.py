"""System checks: what a deployment of the extraction app cannot run without."""

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from . import completion
from .intake.policy import configured_rules


@checks.register()
def completion_recorder_registered(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Without a recorder every finished job would fail at its last step; refuse to start instead."""
    if completion.registered() is not None:
        return []
    return [
        checks.Error(
            "No completion recorder is registered: a finished job's evidence would have nowhere to go.",
            hint="Install the audit app (INSTALLED_APPS), which registers it in its AppConfig.ready().",
            id="extraction.E001",
        )
    ]


@checks.register()
def intake_policy_readable(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A policy naming an unknown kind or action would stop every intake decision: say so before it runs."""
    try:
        configured_rules()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="extraction.E002")]
    return []
