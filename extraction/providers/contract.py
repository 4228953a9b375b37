"""The pinned Infrai contract: load it, validate documents against it, compare it with a provider's.

The pin (`infrai_contract.json`) holds the discovery root and the `pdf.extract_images` capability
document exactly as the provider serves them. The simulator serves them from this file, and
`check_provider_contract` compares the real provider's with it. No Django here.
"""

import json
import re
from pathlib import Path

PIN_PATH = Path(__file__).with_name("infrai_contract.json")

# The JSON Schema subset `validate` understands; anything else in a schema is refused rather than
# silently ignored, so a pin edited with a richer keyword cannot pass checks it never ran.
CHECKED = {"type", "required", "properties", "additionalProperties", "items", "enum", "pattern", "minimum"}
ANNOTATIONS = {"$schema", "title", "description"}

PYTHON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def load_pin() -> dict:
    """The pinned contract: {"discovery": <root document>, "capability": <capability document>}."""
    return json.loads(PIN_PATH.read_text())


def validate(instance, schema_name: str) -> list[str]:
    """Problems of `instance` against the pinned schema `schema_name` (job, submit_response, error)."""
    return check(instance, load_pin()["capability"]["schemas"][schema_name])


def check(instance, schema: dict, at: str = "$") -> list[str]:
    """Problems of `instance` against `schema`, each naming where it is (`$.assets[0].sha256`)."""
    unknown = schema.keys() - CHECKED - ANNOTATIONS
    if unknown:
        raise ValueError(f"{at}: the schema uses keywords this validator does not check: {sorted(unknown)}")
    if "type" in schema and not _has_type(instance, schema["type"]):
        return [f"{at}: expected {_or(schema['type'])}, got {_type_of(instance)}"]
    problems = []
    if "enum" in schema and not any(_same(instance, allowed) for allowed in schema["enum"]):
        problems.append(f"{at}: {instance!r} is not one of {schema['enum']}")
    if isinstance(instance, dict):
        problems += _check_object(instance, schema, at)
    if isinstance(instance, list) and "items" in schema:
        for i, item in enumerate(instance):
            problems += check(item, schema["items"], f"{at}[{i}]")
    if isinstance(instance, str) and "pattern" in schema and not re.search(schema["pattern"], instance):
        problems.append(f"{at}: {instance!r} does not match {schema['pattern']}")
    if _type_of(instance) in ("integer", "number") and instance < schema.get("minimum", instance):
        problems.append(f"{at}: {instance} is below the minimum {schema['minimum']}")
    return problems


def _check_object(instance: dict, schema: dict, at: str) -> list[str]:
    properties = schema.get("properties", {})
    problems = [f"{at}: missing {name!r}" for name in schema.get("required", []) if name not in instance]
    for name, value in instance.items():
        if name in properties:
            problems += check(value, properties[name], f"{at}.{name}")
        elif schema.get("additionalProperties") is False:
            problems.append(f"{at}: unexpected {name!r}")
    return problems


def _has_type(instance, expected) -> bool:
    names = [expected] if isinstance(expected, str) else expected
    actual = _type_of(instance)
    return actual in names or (actual == "integer" and "number" in names)


def _type_of(value) -> str:
    # bool is an int subclass in Python, but JSON keeps them apart.
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    return next((name for name, kind in PYTHON_TYPES.items() if isinstance(value, kind)), type(value).__name__)


def _same(a, b) -> bool:
    return a == b and _type_of(a) == _type_of(b)


def _or(expected) -> str:
    return expected if isinstance(expected, str) else " or ".join(expected)


def diff_contract(published, pinned, at: str = "") -> list[str]:
    """Each difference between a published document and the pinned one, named by its JSON path.

    Lists of plain values (enum, required, type) are compared as sets, so a reordering is not drift:
    `schemas.job.properties.status.enum: published adds 'paused'`.
    """
    if isinstance(published, dict) and isinstance(pinned, dict):
        return _diff_objects(published, pinned, at)
    if isinstance(published, list) and isinstance(pinned, list):
        if _is_set(published) and _is_set(pinned):
            return _diff_sets(published, pinned, at)
        return _diff_sequences(published, pinned, at)
    if not _same(published, pinned):
        return [f"{at or '$'}: published {_show(published)}, pinned {_show(pinned)}"]
    return []


def _diff_objects(published: dict, pinned: dict, at: str) -> list[str]:
    differences = []
    for key in sorted(published.keys() | pinned.keys()):
        here = _join(at, key)
        if key not in pinned:
            differences.append(f"{here}: published adds {_show(published[key])}")
        elif key not in published:
            differences.append(f"{here}: published drops it (pinned {_show(pinned[key])})")
        else:
            differences += diff_contract(published[key], pinned[key], here)
    return differences


def _diff_sets(published: list, pinned: list, at: str) -> list[str]:
    added = [v for v in published if v not in pinned]
    dropped = [v for v in pinned if v not in published]
    return [f"{at}: published adds {_show(v)}" for v in added] + [f"{at}: published drops {_show(v)}" for v in dropped]


def _diff_sequences(published: list, pinned: list, at: str) -> list[str]:
    differences = []
    for i, (a, b) in enumerate(zip(published, pinned)):
        differences += diff_contract(a, b, f"{at}[{i}]")
    if len(published) != len(pinned):
        differences.append(f"{at}: published has {len(published)} items, pinned {len(pinned)}")
    return differences


def _is_set(values: list) -> bool:
    scalars = all(isinstance(v, (str, int, float, bool)) or v is None for v in values)
    return scalars and len({json.dumps(v) for v in values}) == len(values)


def _join(at: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", key):
        return f"{at}.{key}" if at else key
    return f"{at}[{json.dumps(key)}]"


def _show(value) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."
