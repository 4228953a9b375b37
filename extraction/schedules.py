"""The periodic tasks of the extraction app, created (or corrected) after every migrate.

Another app with periodic tasks of its own (audit) passes its table to `ensure` from its own post_migrate.
"""

from django.conf import settings

# name: (task, minutes between runs as a settings attribute)
SCHEDULES = {
    "pagetrail-reconcile": ("extraction.tasks.reconcile", "PAGETRAIL_RECONCILE_EVERY_MINUTES"),
    "pagetrail-sweep": ("extraction.tasks.sweep", "PAGETRAIL_RECONCILE_EVERY_MINUTES"),
}


def ensure(schedules: dict[str, tuple[str, str]]) -> None:
    """Create (or correct) these periodic tasks, so a deployment cannot miss them."""
    from django_q.models import Schedule

    for name, (func, every) in schedules.items():
        Schedule.objects.update_or_create(
            name=name,
            defaults=dict(func=func, schedule_type=Schedule.MINUTES, minutes=getattr(settings, every), repeats=-1),
        )


def ensure_schedules(**kwargs) -> None:
    ensure(SCHEDULES)
