"""Intake reads one way down: its modules import no module that imports them back, a Submission moves and a
Rejection is recorded in `decision` alone, and every task extraction queues (a
decision, a job, a waiting job woken) is queued in `queue`."""

import ast
from pathlib import Path

EXTRACTION = Path(__file__).resolve().parents[2] / "extraction"
INTAKE = EXTRACTION / "intake"
ORDER = ["staging", "decision", "rounds", "queue"]
SUBMISSION_ONLY = {"hand_back", "mark_accepted", "mark_refused"}
SHARED = {"claim", "release", "mark_woken"}  # a Job's transitions of the same names


def tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), filename=str(path))


def sibling_imports(path: Path) -> set[str]:
    """The modules of the intake package that a module of it imports (`from . import x`, `from .x import y`)."""
    found = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {alias.name for alias in node.names}
    return found


def transitions(path: Path) -> list[str]:
    """The Submission transitions a module calls: those only a Submission has, and any called on a `submission`."""
    found = []
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            on_a_submission = isinstance(node.func.value, ast.Name) and node.func.value.id == "submission"
            if node.func.attr in SUBMISSION_ONLY or (on_a_submission and node.func.attr in SHARED):
                found.append(node.func.attr)
    return found


def test_it_finds_no_import_circle_in_the_intake_package():
    graph = {path.stem: sibling_imports(path) for path in INTAKE.glob("*.py")}

    def reaches(start: str, target: str, seen: frozenset = frozenset()) -> bool:
        return any(n == target or (n not in seen and reaches(n, target, seen | {n})) for n in graph.get(start, ()))

    assert len(graph) > 6 and [name for name in graph if reaches(name, name)] == []


def test_each_step_imports_only_the_steps_below_it():
    for i, step in enumerate(ORDER):
        above = set(ORDER[: i + 1])
        assert sibling_imports(INTAKE / f"{step}.py") & above == set(), step


def test_only_the_decision_moves_a_submission_or_records_a_rejection():
    modules = [path for path in EXTRACTION.rglob("*.py") if path != INTAKE / "submission.py"]
    movers = {str(path.relative_to(EXTRACTION)) for path in modules if transitions(path)}
    recorders = {
        str(path.relative_to(EXTRACTION)) for path in modules if "Rejection.objects.create" in path.read_text()
    }
    assert movers == recorders == {"intake/decision.py"}


def test_it_would_notice_a_transition_made_elsewhere(tmp_path):
    module = tmp_path / "api.py"
    module.write_text(
        "def f(submission, job):\n    submission.claim()\n    job.claim('w')\n    x.mark_refused('a', 'b')\n"
    )
    assert transitions(module) == ["claim", "mark_refused"]


def test_every_task_extraction_queues_is_queued_in_the_queue_module():
    queuing = sorted(
        str(path.relative_to(EXTRACTION))
        for path in EXTRACTION.rglob("*.py")
        if "migrations" not in path.parts
        and any(call in path.read_text() for call in ("async_task", "schedule(", "core.broker"))
    )
    assert queuing == ["intake/queue.py"]
