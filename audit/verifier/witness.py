"""A C2SP tlog-witness anyone can run, without the portal: `python -m audit.verifier.witness serve ...`.

`keygen` makes a witness key (Ed25519 cosignature/v1 or ML-DSA-44) and prints its verifier key, the line a log's
operator configures; `vkey` prints it again; `check` tells an auditor whether a checkpoint note is signed by its log
and cosigned by a quorum of the witnesses they name; `serve` answers `POST /add-checkpoint` (witness_protocol.py) and
`GET /<origin hash>/checkpoint` (the latest checkpoint it cosigned of that log, with the log's and its own
signatures) over HTTP/1.1 with keep-alive, one thread per connection, standard library only.
"""

from __future__ import annotations

import argparse
import signal
import sys
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import cosignature, notes, witnessed
from .witness_protocol import MAX_BODY, Refusal, Witness
from .witness_state import States, origin_hash

TEXT = "text/plain; charset=utf-8"


class WitnessServer(ThreadingHTTPServer):
    """A threading HTTP server answering for one witness."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], witness: Witness):
        super().__init__(address, Handler)
        self.witness = witness


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the spec asks of witnesses
    server_version = "pagetrail-witness"
    # The headers and the body go out in two writes: with Nagle's algorithm the body would wait for the client's
    # delayed ACK of the headers (40 ms a request on Linux loopback).
    disable_nagle_algorithm = True
    server: WitnessServer

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        if self.path != "/add-checkpoint":
            self._refuse(Refusal(404, "not_found", f"No such endpoint: POST {self.path}."))
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._refuse(Refusal(411, "length_required", "Send the request body with a Content-Length."))
            return
        if not 0 <= length <= MAX_BODY:
            self.close_connection = True  # the body stays unread
            self._refuse(Refusal(413, "too_large", f"A request body is at most {MAX_BODY} bytes."))
            return
        try:
            self._answer(200, TEXT, self.server.witness.add_checkpoint(self.rfile.read(length)))
        except Refusal as refusal:
            self._refuse(refusal)
        except Exception as exc:  # a state that cannot be written (disk full): no cosignature, and the log retries
            self.log_error("add-checkpoint failed: %r", exc)
            self._refuse(Refusal(500, "internal_error", "The witness could not keep its state; nothing was cosigned."))

    def do_GET(self) -> None:  # noqa: N802
        parts, witness = self.path.strip("/").split("/"), self.server.witness
        head = None
        if len(parts) == 2 and parts[1] == "checkpoint":
            head = next((witness.states.head(o) for o in witness.logs if origin_hash(o) == parts[0]), None)
        if head is None:
            self._refuse(Refusal(404, "not_found", "This witness has cosigned no checkpoint of that log."))
            return
        self._answer(200, TEXT, head.note)

    def _refuse(self, refusal: Refusal) -> None:
        self._answer(refusal.status, refusal.content_type, refusal.body)

    def _answer(self, status: int, content_type: str, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(witness: Witness, host: str, port: int) -> None:
    """Answer until SIGTERM or SIGINT; prints "listening on http://HOST:PORT" once bound (port 0: any free one)."""
    server = WitnessServer((host, port), witness)

    def stop(signum: int, frame: types.FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"listening on http://{host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def read_logs(entries: list[str]) -> dict[str, list[cosignature.VerifierKey]]:
    """{origin: keys} of --log ORIGIN=VKEY entries (an origin may be given several keys)."""
    logs: dict[str, list[cosignature.VerifierKey]] = {}
    for entry in entries:
        origin, sep, vkey = entry.partition("=")
        if not sep:
            raise cosignature.KeyFormatError(f"--log {entry[:60]!r} is not ORIGIN=VKEY")
        logs.setdefault(origin, []).append(cosignature.parse_vkey(vkey))
    return logs


def read_key_file(path: Path) -> list[cosignature.Cosigner]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        raise cosignature.KeyFormatError(f"{path} holds no witness key")
    return [cosignature.parse_private_key(line) for line in lines]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "keygen":
            return _keygen(Path(args.key_file), args.name, args.algorithm)
        if args.command == "check":
            return check(Path(args.note).read_text(encoding="utf-8"), read_logs(args.log), args.witness, args.quorum)
        cosigners = read_key_file(Path(args.key_file))
        if args.command == "vkey":
            print("\n".join(c.verifier().vkey for c in cosigners))
            return 0
        host, _, port = args.listen.rpartition(":")
        serve(Witness(read_logs(args.log), cosigners, States(Path(args.state))), host, int(port))
    except (cosignature.KeyFormatError, OSError, ValueError) as exc:
        print(f"witness: {exc}", file=sys.stderr)
        return 1
    return 0


def check(note: str, logs: dict[str, list[cosignature.VerifierKey]], witnesses: list[str], quorum: int) -> int:
    """Print whether `note` is a checkpoint signed by its log and cosigned by `quorum` of `witnesses`: 0 if so."""
    keys = witnessed.witness_keys(witnesses)
    witnessed.check_quorum(quorum, keys)
    try:
        checkpoint, text, lines = notes.read_checkpoint(note)
    except notes.NoteError as exc:
        print(f"FAILED: the note {exc}.")
        return 1
    try:
        if not cosignature.verified_by(text, lines, logs.get(checkpoint.origin, [])):
            raise notes.NoteError(f"no signature by a key given for the log {checkpoint.origin!r} is on the checkpoint")
        found = witnessed.cosigned(text, lines, keys, quorum)
    except notes.NoteError as exc:
        print(f"FAILED: {exc}.")
        return 1
    verdict = "OK" if found.met else "FAILED"
    print(f"{verdict}: {checkpoint.origin} at {checkpoint.size} leaves, {found.sentence()}")
    return 0 if found.met else 1


def _keygen(path: Path, name: str, algorithm: str) -> int:
    cosigner = cosignature.generate(name, algorithm)
    with open(path, "x", encoding="utf-8") as out:  # never overwrites a key
        path.chmod(0o600)
        out.write(cosigner.private_key + "\n")
    print(cosigner.verifier().vkey)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m audit.verifier.witness", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    keygen = commands.add_parser("keygen", help="make a witness key file and print its verifier key")
    keygen.add_argument("--name", required=True, help="the witness's name, e.g. witness.example.com/w1")
    keygen.add_argument("--algorithm", choices=sorted(cosignature.ALGORITHMS), default="ml-dsa-44")
    keygen.add_argument("--key-file", required=True, help="the file to create (mode 0600; never overwritten)")
    vkey = commands.add_parser("vkey", help="print the verifier keys of a key file")
    vkey.add_argument("--key-file", required=True)
    check = commands.add_parser("check", help="check a checkpoint note's log signature and witness cosignatures")
    check.add_argument("note", help="the checkpoint note, e.g. as GET /api/v1/log/checkpoint serves it")
    check.add_argument("--log", action="append", default=[], help="ORIGIN=VKEY of the log (repeatable)")
    check.add_argument("--witness", action="append", default=[], help="a witness's verifier key (repeatable)")
    check.add_argument("--quorum", type=int, default=1, help="how many witnesses must have cosigned (default 1)")
    serve = commands.add_parser("serve", help="answer add-checkpoint requests")
    serve.add_argument("--state", required=True, help="the directory of the witness's state, one file per log")
    serve.add_argument("--log", action="append", default=[], help="ORIGIN=VKEY of a log to follow (repeatable)")
    serve.add_argument("--key-file", required=True, help="the witness's keys, one PRIVATE+KEY+... line each")
    serve.add_argument("--listen", default="127.0.0.1:7380", help="HOST:PORT (default 127.0.0.1:7380)")
    return parser


if __name__ == "__main__":
    sys.exit(main())
