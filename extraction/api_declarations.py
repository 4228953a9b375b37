"""What the OpenAPI document declares of `POST /bundles` that its Python signature cannot say."""

from .accounts import IdempotencyRecord

PDF = {"type": "string", "format": "binary"}
ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
RETRY_AFTER = {"description": "Seconds to wait before trying again.", "required": True, "schema": {"type": "integer"}}

IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "The same key and payload return the same submission (as it is now); another payload is 422 "
    "`idempotency_conflict`; 409 `in_progress` while the first request is still handled. Never cut: a longer one "
    "is 400 `bad_idempotency_key`.",
    "schema": {"type": "string", "maxLength": IdempotencyRecord.KEY_MAX},
}

SUBMIT = {
    "parameters": [IDEMPOTENCY_KEY],
    # django-ninja declares the multipart form alone, its file optional (the signature's default): a raw body is
    # read from the request by the view itself.
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {"title": "BundleUpload", "required": ["file"], "properties": {"file": PDF}}
            },
            "application/pdf": {"schema": PDF},
        },
    },
    "responses": {
        202: {
            "description": "Received: a pending submission an intake worker decides (or, with a known "
            "Idempotency-Key, that submission as it is now)."
        },
        400: {
            "description": "`bad_request` (no file part, another Content-Type, a malformed multipart body), "
            "`bad_idempotency_key`, `too_many_fields`, `too_many_files`, `bad_host`."
        },
        409: {
            "description": "`in_progress`: the first request with this Idempotency-Key is still handled.",
            "headers": {"Retry-After": RETRY_AFTER},
        },
        411: {"description": "`length_required`: a chunked body; send a Content-Length."},
        413: {
            "description": "`too_large`: the body is over the upload limit (refused from its Content-Length "
            "before it is read, or cut off while streaming)."
        },
        422: {"description": "`empty` (no bytes), `idempotency_conflict` (the key was used for another payload)."},
        507: {
            "description": "`storage_unavailable`: the upload could not be stored (a full or read-only temp "
            "area); nothing was kept, the same request (and Idempotency-Key) may pass later."
        },
    },
}
