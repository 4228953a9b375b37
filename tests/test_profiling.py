"""PAGETRAIL_PROFILE_DIR: a process and every process it forks through multiprocessing write their own profile."""

import pstats
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # each test starts a Python process that forks another

PROGRAM = textwrap.dedent(
    """
    import multiprocessing, os
    from core import profiling

    def child_work():
        sum(i * i for i in range(20000))

    if __name__ == "__main__":
        profiling.start_if_asked()
        child = multiprocessing.get_context("fork").Process(target=child_work)
        child.start()
        child.join()
        print(child.pid, os.getpid())
    """
)


def run(tmp_path, env: dict) -> tuple[int, int]:
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, check=True, cwd=tmp_path
    )
    child, parent = map(int, done.stdout.split())
    return child, parent


def env_with(**extra) -> dict:
    import os
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    base = {k: v for k, v in os.environ.items() if k != "PAGETRAIL_PROFILE_DIR"}
    return {**base, "PYTHONPATH": root, **extra}


def test_it_writes_a_profile_of_the_process_and_of_each_forked_child(tmp_path):
    profiles = tmp_path / "profiles"

    child, parent = run(tmp_path, env_with(PAGETRAIL_PROFILE_DIR=str(profiles)))

    assert sorted(p.name for p in profiles.iterdir()) == sorted([f"{child}.prof", f"{parent}.prof"])
    functions = {key[2] for key in pstats.Stats(str(profiles / f"{child}.prof")).stats}  # type: ignore[attr-defined]
    assert "child_work" in functions  # the child's own work, not a copy of the parent's profile


def test_it_profiles_nothing_when_the_variable_is_unset(tmp_path):
    run(tmp_path, env_with())

    assert not list(tmp_path.rglob("*.prof"))
