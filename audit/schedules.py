"""The periodic tasks of the audit app, created (or corrected) after every migrate."""

from extraction.schedules import ensure

# name: (task, minutes between runs as a settings attribute)
SCHEDULES = {
    "pagetrail-sweep-outputs": ("audit.tasks.sweep_outputs", "PAGETRAIL_RECONCILE_EVERY_MINUTES"),
    "pagetrail-checkpoint": ("audit.tasks.write_checkpoint", "PAGETRAIL_CHECKPOINT_EVERY_MINUTES"),
    "pagetrail-verify": ("audit.tasks.scheduled_verification", "PAGETRAIL_VERIFY_EVERY_MINUTES"),
    "pagetrail-retention": ("audit.tasks.apply_retention", "PAGETRAIL_RETENTION_EVERY_MINUTES"),
}


def ensure_schedules(**kwargs) -> None:
    ensure(SCHEDULES)
