"""The OpenAPI document matches the behaviour: schemathesis drives every operation through the WSGI app
and checks each answer (status documented, body matching its schema, no server error)."""

import json

import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from extraction.accounts import IdempotencyRecord, ServiceAccount
from extraction.models import Job, Submission
from extraction.runner import run_job
from portal.wsgi import application
from tests import pdfs

from .test_api import submitted

# A raw PDF body is bytes as any other: schemathesis sends what it generates for it as it would octets.
schemathesis.serializer.alias("application/pdf", "application/octet-stream")
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)


@pytest.fixture
def token(db):
    from django.core.cache import cache

    cache.clear()
    account = ServiceAccount.objects.create(name="schemathesis")
    secret = account.issue_token()
    return secret


@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_answers_as_documented(case, token):
    # A schema-valid upload may still be refused from its bytes (not a PDF: 415, a damaged PDF: 422); those
    # answers are documented, so the "schema-valid data must be accepted" check does not apply here.
    # A negative case may be one without the token: sent as generated, not with the token put back (ST201 once
    # flagged such a request, valid by the time it left, for being accepted).
    missing = case.operation.schema.security.is_security_param_negated(case)
    headers = {} if missing else {"Authorization": f"Bearer {token}"}
    case.call_and_validate(headers=headers, excluded_checks=[schemathesis.checks.positive_data_acceptance])


# ---------- what the document declares, against what the code holds ----------


@pytest.fixture
def document(client):
    return client.get("/api/v1/openapi.json").json()


def operations(document):
    return [
        (f"{method.upper()} {path}", op)
        for path, methods in document["paths"].items()
        for method, op in methods.items()
    ]


def test_every_operation_declares_the_refusals_any_request_may_get(document):
    for name, operation in operations(document):
        expected = {"400", "405", "429", "500"} | ({"401"} if operation.get("security") else set())
        assert expected <= set(operation["responses"]), name
        assert all(
            "X-Request-Id" in r["headers"] and "RateLimit" in r["headers"] for r in operation["responses"].values()
        )


def test_no_read_declares_what_only_an_upload_can_answer(document):
    for name, operation in operations(document):
        if name.startswith(("GET", "HEAD")):
            assert not {"411", "413"} & set(operation["responses"]), name


def test_submit_declares_its_key_both_bodies_and_a_required_file(document):
    submit = document["paths"]["/api/v1/bundles"]["post"]
    key = next(p for p in submit["parameters"] if p["name"] == "Idempotency-Key")
    assert (key["in"], key["schema"]["maxLength"]) == ("header", IdempotencyRecord.KEY_MAX)
    bodies = submit["requestBody"]["content"]
    assert bodies["application/pdf"]["schema"] == {"type": "string", "format": "binary"}
    assert bodies["multipart/form-data"]["schema"]["required"] == ["file"]
    assert submit["responses"]["409"]["headers"]["Retry-After"]["required"] is True


def test_states_are_enums_of_the_models_values(document):
    schemas = document["components"]["schemas"]
    assert schemas["JobState"]["enum"] == [s.value for s in Job.Status]
    assert schemas["SubmissionState"]["enum"] == [s.value for s in Submission.State]
    assert schemas["JobOut"]["properties"]["state"] == {"$ref": "#/components/schemas/JobState"}


def test_the_manifest_answer_names_its_ed25519_signature_and_schema(document):
    answer = document["paths"]["/api/v1/manifests/{manifest_id}"]["get"]["responses"]["200"]
    assert "Ed25519" in answer["headers"]["X-Manifest-Signature"]["description"]
    assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Manifest"}
    assert {"X-Manifest-SHA256", "X-Manifest-Key-Id", "ETag", "Last-Modified"} <= set(answer["headers"])


@pytest.mark.django_db
def test_real_manifests_from_the_pipeline_match_the_declared_schema(client, document, token, tmp_path):
    declared = jsonschema.Draft202012Validator(document["components"]["schemas"]["Manifest"])
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    for pdf in (pdfs.mixed(tmp_path), pdfs.reused_on_three_pages(tmp_path)):
        job_id = submitted(client, token, pdf.read_bytes())["job"]["id"]
        run_job(job_id)
        body = json.loads(client.get(f"/api/v1/jobs/{job_id}/manifest", **auth).content)
        assert body["assets"] and list(declared.iter_errors(body)) == []
        assert list(declared.iter_errors({**body, "undeclared": 1})), "a field the schema does not name is refused"


def test_the_webhook_endpoint_declares_a_closed_body_and_the_secret_once(document):
    put = document["paths"]["/api/v1/webhook-endpoint"]["put"]
    assert {"400", "401", "411", "413"} <= set(put["responses"])
    schemas = document["components"]["schemas"]
    assert schemas["WebhookEndpointIn"]["additionalProperties"] is False
    assert "once" in schemas["WebhookEndpointOut"]["properties"]["secret"]["description"]
    assert {"get", "head", "put", "delete"} == set(document["paths"]["/api/v1/webhook-endpoint"])
