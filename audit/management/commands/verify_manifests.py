import json

from django.core.management.base import BaseCommand, CommandError

from audit.verify import verify_all


class Command(BaseCommand):
    help = "Re-read every stored asset and manifest; report mismatches and missing files (exit 1 if any)."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        findings, counts = verify_all()
        if options["json"]:
            self.stdout.write(json.dumps({"ok": not findings, **counts,
                                          "findings": [f.as_dict() for f in findings]}, indent=2))
        else:
            for f in findings:
                self.stdout.write(f"{f.kind}: manifest {f.manifest_sequence} {f.name}: {f.detail}")
            self.stdout.write(f"checked {counts['manifests']} manifests, {counts['assets']} assets "
                              f"({counts['bytes']} bytes): {len(findings)} problem(s)")
        if findings:
            raise CommandError(f"{len(findings)} problem(s) found", returncode=1)
