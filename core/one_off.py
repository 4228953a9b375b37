"""A task run once, later: a django-q2 one-off schedule, the way every retry and wake-up here waits."""

import time
from datetime import datetime


def run_at(task: str, *args, name: str, when: datetime) -> None:
    """The scheduler enqueues it when due (at its next tick, so never early). `name` starts the schedule's name (a
    re-drive looks schedules up by it); a clock reading ends it, so that two of the same name never collide."""
    from django_q.models import Schedule
    from django_q.tasks import schedule

    schedule(task, *args, name=f"{name}-{time.time_ns()}", schedule_type=Schedule.ONCE, repeats=-1, next_run=when)
