"""The locks that `make install` and a production install use still match pyproject.toml."""

import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests import lockfile

FIX = "run `make lock LOCK_ARGS=` (keeps the other pins) and commit the locks"
LOCKS = pytest.mark.parametrize("lock", lockfile.LOCKS, ids=lambda lock: lock.name)


def pins(lock) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, version in re.findall(r"^([A-Za-z0-9._-]+)==([^ ;\\]+)", lock.read_text(), re.MULTILINE):
        found.setdefault(canonicalize_name(name), []).append(version)
    return found


def asked_for(extras) -> list[Requirement]:
    project = tomllib.loads((lockfile.ROOT / "pyproject.toml").read_text())["project"]
    chosen = [
        r for name, extra in project["optional-dependencies"].items() if extras is None or name in extras for r in extra
    ]
    tools = [line.split("#")[0].strip() for line in lockfile.TOOLS.read_text().splitlines()]
    return [Requirement(line) for line in [*project["dependencies"], *chosen, *tools] if line]


@LOCKS
def test_it_was_resolved_from_the_current_pyproject_toml(lock):
    recorded = lockfile.recorded_sha256(lock.read_text())

    assert recorded == lockfile.inputs_sha256(), f"pyproject.toml's dependencies changed since the lock: {FIX}"


@LOCKS
def test_it_pins_every_requirement_within_its_bounds(lock):
    locked = pins(lock)
    outside = {
        str(r): locked.get(canonicalize_name(r.name))
        for r in asked_for(lockfile.LOCKS[lock])
        if not locked.get(canonicalize_name(r.name))
        or not all(r.specifier.contains(v, prereleases=True) for v in locked[canonicalize_name(r.name)])
    }

    assert outside == {}, f"requirements not pinned within their bounds: {FIX}"


@LOCKS
def test_it_has_hashes_for_every_pin(lock):
    blocks = re.split(r"\n(?=[A-Za-z0-9])", lock.read_text())
    unhashed = [b.split()[0] for b in blocks if "==" in b.split()[0] and "--hash=sha256:" not in b]

    assert unhashed == []


def test_production_installs_the_versions_the_tests_ran_with():
    full, production = pins(lockfile.LOCK), pins(lockfile.ROOT / "requirements-production.lock")

    assert {name: versions for name, versions in production.items() if full.get(name) != versions} == {}, FIX
