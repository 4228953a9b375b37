"""The locks against pyproject.toml: what they were made from, and whether they still match.

    python -m tests.lockfile stamp   (run by `make lock`, after uv has written the locks)

requirements.lock has every dependency and extra (`make install`, CI); requirements-production.lock
the dependencies and the production extra only, at the same versions (a production host).

The stamp is the sha256 of everything the lock was resolved from (pyproject.toml's requires-python,
dependencies and extras, and requirements-tools.in), so any change to them without `make lock` is seen.
"""

import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
# lock -> the extras it holds (None: all of them)
LOCKS = {LOCK: None, ROOT / "requirements-production.lock": ("production",)}
TOOLS = ROOT / "requirements-tools.in"
STAMP = "# resolved from sha256:"


def inputs_sha256() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    resolved_from = {key: project.get(key) for key in ("requires-python", "dependencies", "optional-dependencies")}
    resolved_from["tools"] = TOOLS.read_text()
    return hashlib.sha256(json.dumps(resolved_from, sort_keys=True).encode()).hexdigest()


def recorded_sha256(lock_text: str) -> str | None:
    found = re.search(rf"^{re.escape(STAMP)}([0-9a-f]{{64}})$", lock_text, re.MULTILINE)
    return found.group(1) if found else None


def stamp() -> None:
    for lock in LOCKS:
        text = "".join(line for line in lock.read_text().splitlines(keepends=True) if not line.startswith(STAMP))
        lock.write_text(f"{STAMP}{inputs_sha256()}\n{text}")


if __name__ == "__main__":
    if sys.argv[1:] != ["stamp"]:
        raise SystemExit("usage: python -m tests.lockfile stamp")
    stamp()
