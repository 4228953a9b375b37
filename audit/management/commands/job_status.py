import json

from django.core.management.base import BaseCommand
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery

from audit.models import Asset, Placement, ReviewFlag
from extraction.models import Job


def _count(model):
    """A correlated count, so two counts over different joins do not multiply each other."""
    counted = model.objects.filter(manifest__job=OuterRef("pk")).values("manifest").annotate(n=Count("pk"))
    return Subquery(counted.values("n")[:1], output_field=IntegerField())


def _seconds(delta):
    return round(delta.total_seconds(), 3) if delta is not None else None


class Command(BaseCommand):
    help = "List jobs with their state, counts and timings."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--state", help="only jobs in this state")

    def handle(self, *args, **options):
        jobs = (
            Job.objects.select_related("bundle")
            .annotate(
                n_assets=_count(Asset),
                n_placements=_count(Placement),
                n_flags=_count(ReviewFlag),
                n_retries=Count("attempts", filter=Q(attempts__outcome="retry"), distinct=True),
                n_submits=Count("attempts", filter=Q(attempts__kind="submit", attempts__outcome="ok"), distinct=True),
            )
            .order_by("pk")
        )
        if options["state"]:
            jobs = jobs.filter(status=options["state"])
        rows = [self._row(job) for job in jobs]
        if options["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for r in rows:
            self.stdout.write(
                f"job {r['job_id']:>5} {r['state']:<10} {r['provider']:<7} pages {r['pages']:>5} "
                f"assets {r['assets']:>5} placements {r['placements']:>5} wait {r['queue_wait_s']}s "
                f"extract {r['extraction_s']}s {r['error_code']} {r['correlation_id'][:16]}"
            )

    def _row(self, job):
        return {
            "job_id": job.pk,
            "correlation_id": job.bundle.correlation_id,
            "state": job.status,
            "provider": job.provider,
            "extractor_version": job.extractor_version,
            "pages": job.bundle.page_count,
            "assets": job.n_assets or 0,
            "placements": job.n_placements or 0,
            "queue_wait_s": _seconds(job.queue_wait),
            "extraction_s": _seconds(job.extraction_time),
            "manifest_write_s": _seconds(
                job.manifest_durable_at - job.provider_finished_at
                if job.manifest_durable_at and job.provider_finished_at
                else None
            ),
            "retries": job.n_retries,
            "provider_submissions": job.n_submits,
            "temp_peak_bytes": job.temp_peak_bytes,
            "needs_review": bool(job.n_flags),
            "error_code": job.error_code,
            "error_message": job.error_message,
        }
