"""requirements.lock, which `make install` installs, still matches pyproject.toml."""

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests import lockfile

FIX = "run `make lock LOCK_ARGS=` (keeps the other pins) and commit requirements.lock"


def pins() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, version in re.findall(r"^([A-Za-z0-9._-]+)==([^ ;\\]+)", lockfile.LOCK.read_text(), re.MULTILINE):
        found.setdefault(canonicalize_name(name), []).append(version)
    return found


def asked_for() -> list[Requirement]:
    project = tomllib.loads((lockfile.ROOT / "pyproject.toml").read_text())["project"]
    lines = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    tools = [line.split("#")[0].strip() for line in lockfile.TOOLS.read_text().splitlines()]
    return [Requirement(line) for line in [*lines, *tools] if line]


def test_it_was_resolved_from_the_current_pyproject_toml():
    recorded = lockfile.recorded_sha256(lockfile.LOCK.read_text())

    assert recorded == lockfile.inputs_sha256(), f"pyproject.toml's dependencies changed since the lock: {FIX}"


def test_it_pins_every_requirement_within_its_bounds():
    locked = pins()
    outside = {str(r): locked.get(canonicalize_name(r.name)) for r in asked_for()
               if not locked.get(canonicalize_name(r.name))
               or not all(r.specifier.contains(v, prereleases=True) for v in locked[canonicalize_name(r.name)])}

    assert outside == {}, f"requirements not pinned within their bounds: {FIX}"


def test_it_has_hashes_for_every_pin():
    blocks = re.split(r"\n(?=[A-Za-z0-9])", lockfile.LOCK.read_text())
    unhashed = [b.split()[0] for b in blocks if "==" in b.split()[0] and "--hash=sha256:" not in b]

    assert unhashed == []
