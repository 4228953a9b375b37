"""django-q2 entry points of the audit app (thin)."""

from . import services


def sweep_outputs() -> dict:
    return services.sweep_outputs()
