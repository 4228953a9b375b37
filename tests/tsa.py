"""A Time-Stamping Authority for the tests: OpenSSL's `ts -reply` behind a tiny HTTP server on loopback."""

import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CONFIG = """[ tsa ]
default_tsa = tsa_config1
[ tsa_config1 ]
dir = {dir}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.crt
certs = $dir/tsa.crt
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
other_policies = 1.2.3.4.5
digests = sha256
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


def make_authority(root: Path, name: str = "Test TSA") -> Path:
    """A directory with a self-signed TSA key and certificate (extended key usage: time stamping only)."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}"]
        + ["-keyout", str(root / "tsa.key"), "-out", str(root / "tsa.crt")]
        + ["-addext", "extendedKeyUsage=critical,timeStamping"],
        check=True,
        capture_output=True,
    )
    (root / "serial").write_text("01\n")
    (root / "tsa.cnf").write_text(CONFIG.format(dir=root))
    return root


class Authority(ThreadingHTTPServer):
    def __init__(self, root: Path):
        super().__init__(("127.0.0.1", 0), Reply)
        self.root, self.lock, self.replies = root, threading.Lock(), 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/tsa"


class Reply(BaseHTTPRequestHandler):
    def do_POST(self):
        query = self.rfile.read(int(self.headers["Content-Length"]))
        root = self.server.root
        with self.server.lock:  # one serial file
            (root / "query.tsq").write_bytes(query)
            done = subprocess.run(
                ["openssl", "ts", "-reply", "-config", str(root / "tsa.cnf"), "-queryfile", str(root / "query.tsq")]
                + ["-out", str(root / "reply.tsr")],
                capture_output=True,
            )
            reply = (root / "reply.tsr").read_bytes() if done.returncode == 0 else b""
            self.server.replies += 1
        self.send_response(200 if reply else 500)
        self.send_header("Content-Type", "application/timestamp-reply")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


def serve(root: Path) -> Authority:
    server = Authority(root)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
