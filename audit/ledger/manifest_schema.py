"""The manifest body as a JSON Schema (2020-12, as OpenAPI 3.1 reads it): what the API declares a manifest to be.

It describes every schema version a deployment may still serve (1-3 name `previous_sha256`; 4 on do not; 1-4 repeat
the correlation id as a top-level `correlation_id`, 5 on state it once as `input.sha256`; 6 on name the intake
policy and the files attached in `input`), and
nothing more: a field the writer (manifest_writing.py) adds without adding it here fails the test that validates
the pipeline's real manifests against the served document.
"""

SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
TIME = {"type": "string", "format": "date-time"}
MAYBE_TIME = {"anyOf": [TIME, {"type": "null"}]}
COUNT = {"type": "integer", "minimum": 0}
PAGE = {"type": "integer", "minimum": 1}


def closed(required: list[str], properties: dict, **extra) -> dict:
    """An object with these properties and no others."""
    return {"type": "object", "required": required, "properties": properties, "additionalProperties": False, **extra}


FINDING = closed(
    ["kind", "what", "objects", "count", "action"],
    {
        "kind": {"type": "string", "description": "A kind the intake policy names (docs/pipeline.md)."},
        "what": {"type": "string"},
        "objects": {"type": "array", "items": {"type": "string"}, "description": "The first objects it was in."},
        "count": COUNT,
        "action": {"enum": ["refuse", "flag", "accept"], "description": "What the policy did with it."},
        "detail": {"type": "string"},
    },
)
ATTACHMENT = closed(
    ["name", "sha256", "size", "pdf", "object"],
    {
        "name": {"type": "string"},
        "sha256": {"type": "string", "pattern": "^([0-9a-f]{64})?$", "description": "Empty when it cannot be decoded."},
        "size": COUNT,
        "pdf": {"type": "boolean"},
        "object": {"type": "string"},
    },
)

ASSET = closed(
    ["name", "sha256", "size", "content_type", "width", "height", "pages", "placements", "attempt", "created_at"],
    {
        "name": {
            "type": "string",
            "description": "Its storage name, as the job's `assets` and the asset route give it.",
        },
        "sha256": SHA256,
        "size": COUNT,
        "content_type": {"type": "string"},
        "width": COUNT,
        "height": COUNT,
        "pages": {"type": "array", "items": PAGE, "description": "Every page it is drawn on."},
        "placements": {
            "type": "array",
            "description": "Each place it is drawn: [page from 1, index on that page from 0].",
            "items": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2},
        },
        "attempt": PAGE,
        "created_at": TIME,
        "colorspace": {"type": "string", "description": "How it was made, when the provider says."},
        "bits": COUNT,
        "method": {"type": "string"},
        "stream_sha256": SHA256,
    },
)

MANIFEST = closed(
    ["schema_version", "sequence", "key_id", "input", "extractor", "job", "assets", "warnings", "created_at"],
    {
        "schema_version": {"type": "integer", "minimum": 1},
        "sequence": {
            "type": "integer",
            "minimum": 0,
            "description": "Schema 4 on: its leaf index in the transparency log. Schemas 1-3: its place in the "
            "frozen hash chain, from 1.",
        },
        "previous_sha256": {**SHA256, "description": "Schemas 1-3 only: the sha256 of the manifest before it."},
        "key_id": {"type": "string", "description": "The key that signed it (X-Manifest-Key-Id)."},
        "correlation_id": {**SHA256, "description": "Schemas 1-4 only: input.sha256 again."},
        "input": closed(
            ["sha256", "size", "page_count"],
            {
                "sha256": SHA256,
                "size": COUNT,
                "page_count": COUNT,
                "encrypted": {"type": "boolean"},
                "repaired": {"type": "boolean"},
                "leading_bytes": COUNT,
                "policy": closed(
                    ["version", "found"],
                    {
                        "version": {"anyOf": [PAGE, {"type": "null"}], "description": "Schema 6 on."},
                        "found": {"type": "array", "items": FINDING},
                    },
                ),
                "attachments": {"type": "array", "items": ATTACHMENT, "description": "Schema 6 on."},
            },
        ),
        "extractor": closed(
            ["name", "version", "provider"],
            {
                "name": {"type": "string"},
                "version": {"type": "string"},
                "provider": {"type": "string"},
                "libraries": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        ),
        "job": closed(
            ["id", "idempotency_key", "provider_job_id", "enqueued_at", "picked_up_at", "submitted_at"]
            + ["provider_finished_at"],
            {
                "id": PAGE,
                "idempotency_key": {"type": "string"},
                "provider_job_id": {"type": "string"},
                "enqueued_at": MAYBE_TIME,
                "picked_up_at": MAYBE_TIME,
                "submitted_at": MAYBE_TIME,
                "provider_finished_at": MAYBE_TIME,
            },
        ),
        "assets": {"type": "array", "items": ASSET},
        "warnings": {"type": "array", "items": {"type": "string"}},
        "created_at": TIME,
    },
    title="Manifest",
    description="A completed job's manifest: canonical JSON (sorted keys, no whitespace, ASCII), signed as served "
    "(X-Manifest-Signature) and a leaf of the transparency log.",
)
