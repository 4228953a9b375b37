import base64
import json
from pathlib import Path

import requests
from django.core.management.base import BaseCommand, CommandError

from audit.ledger import witness
from audit.verifier import notes

EXIT = {"fork": 2, "rollback": 3}


class Command(BaseCommand):
    help = (
        "Witness a Pagetrail transparency log from outside: fetch its latest signed checkpoint, check that it "
        "extends the one kept in --state (and agrees with --compare checkpoints of other witnesses or packages), "
        "keep it. Exits 2 on a fork, 3 on a rollback, 1 on any other failure."
    )

    def add_arguments(self, parser):
        parser.add_argument("portal", help="the portal's base URL, e.g. https://pagetrail.example")
        parser.add_argument("--state", required=True, help="the file holding the last checkpoint this witness kept")
        parser.add_argument("--public-keys", help="the portal's published key list (signing-keys.json), obtained once")
        parser.add_argument("--public-key", action="append", default=[], help="a base64 Ed25519 public key")
        parser.add_argument("--origin", help="the log's origin line, to refuse another log's checkpoints")
        parser.add_argument(
            "--compare",
            action="append",
            default=[],
            help="another witness's state file, an evidence package or a checkpoint note to agree with",
        )

    def handle(self, *args, **options):
        publics = [base64.b64decode(k, validate=True) for k in options["public_key"]]
        if options["public_keys"]:
            publics += witness.public_keys(json.loads(Path(options["public_keys"]).read_text()))
        if not publics:
            raise CommandError("Give the portal's public keys (--public-keys or --public-key), obtained separately.")
        seen = witness.Witness(options["portal"], publics, options["origin"])
        try:
            state = witness.observe(seen, Path(options["state"]), options["compare"])
        except witness.WitnessAlarm as alarm:
            raise CommandError(
                f"{alarm} (the state file keeps the last good checkpoint)", returncode=EXIT[alarm.kind]
            ) from alarm
        except (notes.NoteError, requests.RequestException, ValueError, KeyError, OSError) as exc:
            raise CommandError(f"The witness could not check the log: {exc}") from exc
        verb = "first checkpoint kept" if state["first_seen"] else "consistent; checkpoint kept"
        self.stdout.write(f"OK: {state['origin']} at {state['tree_size']} records, {verb}.")
