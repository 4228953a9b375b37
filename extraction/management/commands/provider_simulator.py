import os
import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from extraction.providers.simulator import PROFILES, Simulator


class Command(BaseCommand):
    help = (
        "Run the Infrai simulator (the managed provider's contract, our extractor behind it) until Ctrl-C. "
        "The API key comes from INFRAI_API_KEY."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--profile", default="healthy", choices=sorted(PROFILES))
        parser.add_argument("--api-key", help="default: INFRAI_API_KEY (prefer it: a command line is visible to ps)")
        parser.add_argument("--burst", type=int, help="rate_limited: 429s in a row; flaky_5xx: failures per route")
        parser.add_argument("--retry-after", type=int, default=1, help="rate_limited: seconds in Retry-After")
        parser.add_argument("--slow-seconds", type=float, default=2.0, help="slow: how long a job stays running")

    def handle(self, *args, **options):
        key = options["api_key"] or os.environ.get("INFRAI_API_KEY")
        if not key:
            raise CommandError(
                "No API key: set INFRAI_API_KEY (or pass --api-key); the simulator will not run without one."
            )
        simulator = Simulator(
            options["host"],
            options["port"],
            key,
            options["profile"],
            burst=options["burst"],
            retry_after=options["retry_after"],
            slow_seconds=options["slow_seconds"],
        )
        # Ctrl-C, or a service manager's SIGTERM, asks the loop below to end; both are caught before the banner is
        # printed, so a stop sent as soon as the banner is read still goes through `finally` (temp files removed).
        stopping = threading.Event()
        for stop_signal in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop_signal, lambda *_: stopping.set())
        try:
            simulator.start()
        except OSError as exc:
            raise CommandError(f"Cannot listen on {options['host']}:{options['port']}: {exc.strerror}.") from None
        try:
            self.stdout.write(f"Infrai simulator at {simulator.url} (profile {options['profile']}); Ctrl-C stops it.")
            self.stdout.flush()
            while not stopping.wait(0.2):  # a timed wait: the handler runs between waits, whatever the thread does
                pass
            self.stdout.write("Stopping.")
        finally:
            simulator.stop()
