"""Witnesses and logs for tests: `python -m audit.verifier.witness serve` as a real process on a free loopback port,
and a small log of our own that signs checkpoints and proves consistency (audit.verifier's notes and merkle)."""

import hashlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit.verifier import cosignature, merkle, notes, witness_protocol

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Log:
    """A log whose leaves are "leaf 0", "leaf 1", ...; `key` signs its checkpoints under `origin`."""

    origin: str = "log.example/test"
    key: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)
    prefix: str = "leaf"

    def leaves(self, size: int) -> list[bytes]:
        return [merkle.leaf_hash(f"{self.prefix} {i}".encode()) for i in range(size)]

    def root(self, size: int) -> bytes:
        return merkle.root(self.leaves(size))

    def checkpoint(self, size: int, root: bytes | None = None) -> str:
        text = notes.checkpoint_text(self.origin, size, self.root(size) if root is None else root)
        return notes.sign(text, self.origin, self.key)

    def proof(self, old: int, size: int) -> list[bytes]:
        return merkle.consistency_proof(self.leaves(size), old) if 0 < old < size else []

    def request(self, old: int, size: int) -> bytes:
        return witness_protocol.request_body(old, self.proof(old, size), self.checkpoint(size))

    @property
    def vkey(self) -> str:
        return notes.verifier_key(self.origin, self.key.public_key().public_bytes_raw())


class WitnessProcess:
    """One witness server, started at once; `stop()` (or SIGKILL with `kill()`) before the test ends."""

    def __init__(self, state: Path, key_file: Path, logs: dict[str, str], module="audit.verifier.witness", env=None):
        self.state, self.key_file, self.logs, self.module, self.env = state, key_file, logs, module, env
        self.session = requests.Session()
        self.start()

    def start(self) -> None:
        args = [sys.executable, "-m", self.module, "serve", "--state", str(self.state)]
        args += ["--key-file", str(self.key_file), "--listen", "127.0.0.1:0"]
        for origin, vkey in self.logs.items():
            args += ["--log", f"{origin}={vkey}"]
        env = {**os.environ, **(self.env or {})}
        self.proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # printed once the port is bound
        if not line.startswith("listening on "):
            self.kill()
            raise AssertionError(f"the witness did not start: {line!r}")
        self.url = line.split()[-1]

    def add_checkpoint(self, body: bytes) -> requests.Response:
        return self.session.post(f"{self.url}/add-checkpoint", data=body, timeout=30)

    def checkpoint_of(self, origin: str) -> requests.Response:
        return self.session.get(f"{self.url}/{hashlib.sha256(origin.encode()).hexdigest()}/checkpoint", timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)
        self._closed()
        self.session.close()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)
        self._closed()

    def _closed(self) -> None:
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def key_file(path: Path, name: str, *algorithms: str) -> list[cosignature.VerifierKey]:
    """A witness key file at `path` with one key per algorithm under `name`; their verifier keys."""
    cosigners = [cosignature.generate(name, algorithm) for algorithm in algorithms]
    path.write_text("".join(c.private_key + "\n" for c in cosigners))
    return [c.verifier() for c in cosigners]
