import json

from django.core.management.base import BaseCommand, CommandError

from audit.verification import verify
from extraction.models import Bundle


class Command(BaseCommand):
    help = (
        "Re-read every stored asset and manifest (or one bundle's), check hashes, signatures, the chain and "
        "checkpoints; record a verification run and report each problem (exit 1 if any)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--bundle", help="only this correlation id")

    def handle(self, *args, **options):
        bundle = None
        if options["bundle"]:
            bundle = Bundle.objects.filter(correlation_id=options["bundle"]).first()
            if bundle is None:
                raise CommandError(f"No bundle has correlation id {options['bundle']}.")
        run = verify.execute(verify.start_run("verify_manifests", bundle=bundle).pk)
        if run.tries != 1:  # this command's run is new, so its own try is the first; a later one took it over
            raise CommandError(
                f"Run {run.pk} was taken over by a cluster worker (try {run.tries}) after this command stopped "
                f"showing progress; this command recorded nothing. See the run in the admin ({run.status}).",
                returncode=2,
            )
        findings = list(run.findings.select_related("manifest__job__bundle", "asset__manifest__job__bundle", "job"))
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "run": run.pk,
                        "ok": not findings,
                        "manifests": run.manifests_done,
                        "assets": run.assets_done,
                        "bytes": run.bytes_done,
                        "findings": [f.as_dict() for f in findings],
                    },
                    indent=2,
                )
            )
        else:
            for f in findings:
                stored = f" (stored as {f.name})" if f.name else ""  # the name first, the hashes after
                self.stdout.write(f"{f.kind}: {f.concerns}{stored}: {f.detail}")
            self.stdout.write(
                f"run {run.pk}: checked {run.manifests_done} manifests, {run.assets_done} assets "
                f"({run.bytes_done} bytes): {len(findings)} problem(s)"
            )
        if findings:
            raise CommandError(f"{len(findings)} problem(s) found", returncode=1)
