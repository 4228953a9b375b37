"""docs/api.md's curl examples, run as written against a real deployment (gunicorn and workers on this run's
profile), so they cannot drift from what the API answers.

Each `curl` of a ```sh block runs in a shell with `$TOKEN` set, the documented address swapped for the server's,
and the ids the examples made up swapped for those the earlier answers gave. The `# -> ` lines after it are the
documented answer: an optional status (200 when none is named), then its JSON with `...` where fields are left
out, or the names of headers it carries. Every documented field must be in the answer (nested ones by name), and
every top-level value as documented; a `state` not yet reached is polled for, as an integrator would.
"""

import json
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from core.processes import ROOT
from tests import pdfs
from tests.webserver import api_deployment

pytestmark = pytest.mark.slow
API_DOC = ROOT / "docs" / "api.md"
DOCUMENTED_ADDRESS = "http://127.0.0.1:8000"
POLL_SECONDS, POLL_FOR = 0.25, 120.0


def examples(text: str) -> list[tuple[str, str]]:
    """Each curl command of the ```sh blocks (continuation lines joined) and its `# -> ` comment."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        lines = block.replace("\\\n", " ").splitlines()
        for n, line in enumerate(lines):
            if line.lstrip().startswith("curl "):
                said = []
                for after in lines[n + 1 :]:
                    if not after.startswith("#"):
                        break
                    said.append(after.lstrip("#").strip())
                answer = " ".join(said)
                found.append((line.split(" # ")[0].strip(), answer.removeprefix("-> ") if said[:1] else ""))
    return found


def documented(answer: str) -> tuple[int, object, list[str]]:
    """The status, the JSON (None when the answer is not JSON) and the headers an answer comment names."""
    status, rest = (int(answer[:3]), answer[3:].strip()) if re.match(r"\d{3}\b", answer) else (200, answer)
    if not rest.startswith("{"):
        return status, None, re.findall(r"\bX-[\w-]+", rest)
    text = re.sub(r",\s*\.\.\.", "", rest)
    text = re.sub(r"\[\s*\.\.\.\s*\]", "[]", text)
    return status, json.loads(text), []


class Example:
    def __init__(self, server, workdir: Path):
        self.port, self.token, self.workdir = server.port, server.token, workdir
        self.ids: dict[int, int] = {}  # the documented id -> the real one

    def command(self, curl: str) -> str:
        curl = curl.replace(DOCUMENTED_ADDRESS, f"http://127.0.0.1:{self.port}")
        curl = re.sub(r"(?<=/)(\d+)(?=[/\s\"?]|$)", lambda m: str(self.ids.get(int(m[1]), m[1])), curl)
        return f"{curl} -w '\\n%{{http_code}}'"

    def run(self, curl: str) -> tuple[int, dict[str, str], bytes]:
        done = subprocess.run(
            ["bash", "-c", self.command(curl)],
            cwd=self.workdir,
            env={"PATH": "/usr/bin:/bin", "TOKEN": self.token},
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0, (curl, done.stderr)
        output, _, status = done.stdout.rpartition(b"\n")
        headers: dict[str, str] = {}
        if output.startswith(b"HTTP/"):  # `-D -`: the head first
            head, _, output = output.partition(b"\r\n\r\n")
            headers = {
                k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head.decode().split("\r\n"))
            }
        return int(status), headers, output

    def learn_ids(self, said, real) -> None:
        if isinstance(said, dict) and isinstance(real, dict):
            for key, value in said.items():
                if (key == "id" or key.endswith("_id")) and isinstance(value, int) and isinstance(real.get(key), int):
                    self.ids.setdefault(value, real[key])
                self.learn_ids(value, real.get(key))
        elif isinstance(said, list) and said and isinstance(real, list) and real:
            self.learn_ids(said[0], real[0])

    def mapped(self, value):
        return re.sub(r"(?<=/)(\d+)\b", lambda m: str(self.ids.get(int(m[1]), m[1])), value)


def missing(said, real, path="") -> list[str]:
    """Every documented field the answer lacks, by its path."""
    if isinstance(said, dict):
        if not isinstance(real, dict):
            return [path or "/"]
        nested = [m for key, value in said.items() for m in missing(value, real.get(key), f"{path}/{key}")]
        return sorted(set(nested) | {f"{path}/{key}" for key in said if key not in real})
    if isinstance(said, list) and said:
        return missing(said[0], real[0], f"{path}/0") if isinstance(real, list) and real else [path]
    return []


def differing(example: Example, said: dict, real: dict) -> list[str]:
    """Top-level values not as documented (ids as the earlier answers gave them; placeholders and figures aside)."""
    wrong = []
    for key, value in said.items():
        if isinstance(value, str) and ("..." in value or "<" in value):
            continue
        if isinstance(value, str):
            value = example.mapped(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            continue  # an id (learnt) or a figure (a size, a duration)
        elif isinstance(value, (list, dict)):
            continue  # by shape, above
        if real.get(key) != value:
            wrong.append(f"{key}: documented {value!r}, answered {real.get(key)!r}")
    return wrong


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with api_deployment(tmp_path_factory.mktemp("examples"), PAGETRAIL_WORKERS="1") as web:
        yield web


def test_every_curl_example_of_the_api_doc_answers_as_documented(server, tmp_path):
    pdfs.jpeg_rgb(tmp_path).rename(tmp_path / "claims.pdf")  # the file the examples send
    example, ran = Example(server, tmp_path), []
    for curl, answer in examples(API_DOC.read_text()):
        status, said, header_names = documented(answer)
        deadline = time.monotonic() + POLL_FOR
        while True:
            real_status, headers, body = example.run(curl)
            real = json.loads(body) if said is not None and body.strip() else None
            if said is not None and real_status == status:
                example.learn_ids(said, real)
            waiting = isinstance(said, dict) and "state" in said and real.get("state") != said["state"]
            if not waiting or time.monotonic() > deadline:
                break
            time.sleep(POLL_SECONDS)
        assert real_status == status, (curl, real_status, body[:500])
        if said is not None:
            assert missing(said, real) == [] and differing(example, said, real) == [], (curl, real)
        assert [h for h in header_names if h.lower() not in headers] == [], (curl, headers)
        ran.append(shlex.split(curl)[-1])
    assert len(ran) >= 7, ran  # the doc's examples were found, not silently skipped
