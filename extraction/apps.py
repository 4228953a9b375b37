from django.apps import AppConfig


class ExtractionConfig(AppConfig):
    name = "extraction"
    verbose_name = "Extraction"

    def ready(self):
        from django.db.models.signals import post_migrate
        from django_q.signals import post_spawn

        from . import checks, cluster_watch, schedules, worker_start, worker_stop, worker_versions  # noqa: F401  (checks registers)

        post_migrate.connect(schedules.ensure_schedules, sender=self)
        post_spawn.connect(worker_stop.install)  # first: a TERM during the hooks below asks for a stop too
        post_spawn.connect(cluster_watch.watch_master)  # early: the sweep and the PDF child's start take time
        post_spawn.connect(worker_versions.record_at_worker_start)
        post_spawn.connect(worker_start.sweep_on_worker_start)
