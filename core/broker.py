"""Tasks put on a queue through one django-q2 broker per queue and process, not one per task.

django-q2's `async_task` builds a broker for every task it is not given, and the Redis broker opens a new
connection pool with it: a TCP connection, and a SELECT of the database, for each task a job enqueues.
"""

from functools import cache


@cache
def broker_for(queue: str | None = None):
    """The broker of `queue` (the process's own cluster when None), kept for this process's life (the Redis
    client's pool reconnects after a fork by itself)."""
    from django_q.brokers import get_broker

    return get_broker(queue)


def enqueue(func: str, *args, cluster: str | None = None, **options) -> str:
    """`async_task` on the queue `cluster`, through that queue's one broker."""
    from django_q.tasks import async_task

    if cluster is not None:
        options["cluster"] = cluster
    return async_task(func, *args, broker=broker_for(cluster), **options)
