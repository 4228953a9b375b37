from django.apps import AppConfig


class ExtractionConfig(AppConfig):
    name = "extraction"
    verbose_name = "Extraction"

    def ready(self):
        from django.db.models.signals import post_migrate
        from django_q.signals import post_spawn

        from . import cluster_watch, signals, worker_versions

        post_migrate.connect(signals.ensure_schedules, sender=self)
        post_spawn.connect(cluster_watch.watch_master)  # first: the sweep and the PDF child's start take time
        post_spawn.connect(worker_versions.record_at_worker_start)
        post_spawn.connect(signals.sweep_on_worker_start)
