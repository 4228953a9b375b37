"""Every task goes on its queue through that queue's one broker (core/broker.py): django-q2's `async_task`, given
no broker, builds one, and on Redis a new connection pool with it (a TCP connection and a SELECT a task)."""

from pathlib import Path

import pytest
from django.conf import settings

from audit.review import page_hints, previews
from audit.verification import queued_runs
from extraction.intake import queue

ROOT = Path(__file__).resolve().parents[1]
APPS = ("audit", "extraction", "core", "portal")


def test_it_finds_async_task_called_only_in_the_broker_module():
    callers = sorted(
        str(path.relative_to(ROOT))
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts and "async_task(" in path.read_text()
    )
    assert callers == ["core/broker.py"]


@pytest.fixture
def brokers_built(monkeypatch) -> list:
    """The queues async_task built a broker of its own for (the real one, counted on the way)."""
    import django_q.tasks

    built, build = [], django_q.tasks.get_broker
    monkeypatch.setattr(django_q.tasks, "get_broker", lambda queue=None: built.append(queue) or build(queue))
    return built


def queue_size(queue_name: str | None) -> int:
    from django_q.brokers import get_broker

    return get_broker(queue_name).queue_size()


@pytest.mark.django_db
def test_it_queues_a_jobs_tasks_on_their_queues_without_building_a_broker(brokers_built):
    jobs, previews_queue = settings.Q_CLUSTER["name"], settings.PAGETRAIL_PREVIEW_QUEUE
    queue.enqueue_job(1)
    queued_runs.enqueue(2)
    previews.enqueue(3)
    page_hints.enqueue(3)
    assert brokers_built == []
    assert (queue_size(jobs), queue_size(previews_queue)) == (2, 2)
