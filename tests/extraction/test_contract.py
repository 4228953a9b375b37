"""The pinned Infrai contract: the validator, the diff, the healthy simulator against the pin, and the check command."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from extraction.providers.contract import check, diff_contract, load_pin, validate

from .test_simulator import KEY, Client, infrai, pdf, simulator, start  # noqa: F401 (fixtures)

SCHEMAS = load_pin()["capability"]["schemas"]


def good_job() -> dict:
    return {
        "job_id": "job_1",
        "status": "completed",
        "idempotency_key": "k",
        "pages": 1,
        "assets": [
            {
                "id": "a",
                "sha256": "ab" * 32,
                "size": 3,
                "content_type": "image/png",
                "width": 1,
                "height": 1,
                "placements": [{"page": 1, "index": 0}],
                "download_url": "/x",
            }
        ],
        "warnings": [{"page": None, "message": "m"}],
        "partial": True,
        "error": None,
    }


def test_it_accepts_a_valid_job_document():
    assert validate(good_job(), "job") == []


def test_it_names_each_problem_by_its_path():
    job = good_job()
    del job["pages"]
    job["status"] = "paused"
    job["assets"][0]["sha256"] = "XYZ"
    job["assets"][0]["placements"][0]["page"] = 0
    job["partial"] = 1
    job["surprise"] = True
    assert sorted(validate(job, "job")) == sorted(
        [
            "$: missing 'pages'",
            "$.status: 'paused' is not one of ['queued', 'running', 'completed', 'failed', 'cancelled']",
            "$.assets[0].sha256: 'XYZ' does not match ^[0-9a-f]{64}$",
            "$.assets[0].placements[0].page: 0 is below the minimum 1",
            "$.partial: expected boolean, got integer",
            "$: unexpected 'surprise'",
        ]
    )


def test_it_takes_a_type_list_as_nullable():
    assert check(None, {"type": ["integer", "null"]}) == []
    assert check(True, {"type": ["integer", "null"]}) == ["$: expected integer or null, got boolean"]


def test_it_refuses_a_schema_keyword_it_does_not_check():
    with pytest.raises(ValueError, match="oneOf"):
        check(1, {"oneOf": [{"type": "integer"}]})


def test_it_finds_no_difference_between_the_pin_and_itself():
    assert diff_contract(load_pin(), load_pin()) == []


def test_it_names_an_added_enum_value_and_a_renamed_field_by_path():
    published = load_pin()
    schemas = published["capability"]["schemas"]
    schemas["job"]["properties"]["status"]["enum"].append("paused")
    schemas["error"]["properties"]["error"]["properties"]["reason"] = schemas["error"]["properties"]["error"][
        "properties"
    ].pop("message")
    differences = diff_contract(published, load_pin())
    at = "capability.schemas.error.properties.error.properties"
    assert differences == [
        f'{at}.message: published drops it (pinned {{"type": "string"}})',
        f'{at}.reason: published adds {{"type": "string"}}',
        "capability.schemas.job.properties.status.enum: published adds 'paused'",
    ]


def test_it_does_not_take_a_reordered_list_for_drift():
    published = load_pin()
    published["capability"]["schemas"]["job"]["required"].reverse()
    assert diff_contract(published, load_pin()) == []


def test_it_quotes_keys_that_are_not_names():
    published = load_pin()
    published["discovery"]["capabilities"]["pdf.extract_images"]["href"] = "/v2/x"
    assert diff_contract(published, load_pin()) == [
        "discovery.capabilities[\"pdf.extract_images\"].href: published '/v2/x', pinned "
        "'/v1/discovery/pdf.extract_images'"
    ]


def test_it_serves_the_pinned_documents(infrai):
    pin = load_pin()
    assert infrai.get("/v1/discovery").json() == pin["discovery"]
    href = pin["discovery"]["capabilities"]["pdf.extract_images"]["href"]
    assert infrai.get(href).json() == pin["capability"]
    assert infrai.get("/v1/discovery/pdf.nothing").status_code == 404


def healthy_responses(client: Client, pdf: bytes) -> list[tuple[str, object]]:
    """(schema name, body) for each kind of JSON answer the healthy simulator gives."""
    accepted = client.submit(pdf, "key-1")
    job_id = accepted.json()["job_id"]
    answers = [("submit_response", accepted), ("job", client.job(job_id))]
    assert client.wait_done(job_id)["status"] == "completed"
    answers += [("submit_response", client.submit(pdf, "key-1")), ("job", client.job(job_id))]
    refusals = [
        client.submit(pdf, "key-1", checksum="0" * 64),
        client.submit(pdf, "key-1", header_key="other"),
        client.submit(b"not a pdf", "key-2"),
        client.submit(pdf[:-10] + b"0123456789", "key-1"),
        client.job("job_nope"),
        client.get("/v1/nothing"),
        client.get("/v1/discovery", headers={"Authorization": "Bearer wrong"}),
    ]
    assert sorted({r.status_code for r in refusals}) == [401, 404, 422]
    return [(name, response.json()) for name, response in answers + [("error", r) for r in refusals]]


def test_it_answers_only_with_documents_the_pinned_schemas_accept(infrai, pdf):
    answers = healthy_responses(infrai, pdf)
    assert {name for name, _ in answers} == {"submit_response", "job", "error"}
    assert [(name, validate(body, name)) for name, body in answers] == [(name, []) for name, _ in answers]


def test_it_agrees_with_jsonschema_on_the_pin_and_the_answers(infrai, pdf):
    jsonschema = pytest.importorskip("jsonschema")
    for schema in SCHEMAS.values():
        jsonschema.Draft202012Validator.check_schema(schema)
    for name, body in healthy_responses(infrai, pdf):
        assert list(jsonschema.Draft202012Validator(SCHEMAS[name]).iter_errors(body)) == []
    broken = good_job() | {"pages": "one"}
    assert validate(broken, "job") and list(jsonschema.Draft202012Validator(SCHEMAS["job"]).iter_errors(broken))


def run_check(monkeypatch, base_url: str | None) -> tuple[str, str | None]:
    """(stdout, error or None) of check_provider_contract."""
    monkeypatch.setenv("INFRAI_API_KEY", KEY)
    monkeypatch.delenv("INFRAI_BASE_URL", raising=False)
    out = StringIO()
    try:
        call_command("check_provider_contract", *(["--base-url", base_url] if base_url else []), stdout=out)
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), None


def test_it_finds_that_the_healthy_simulator_matches_the_pin(monkeypatch, simulator):
    out, error = run_check(monkeypatch, simulator.url)
    assert (out.strip(), error) == ("contract matches the pin", None)
    assert KEY not in out


def test_it_fails_naming_the_drift_of_a_drifted_provider(monkeypatch, start):
    out, error = run_check(monkeypatch, start("schema_drift").url)
    assert "differs from the pin" in error
    assert "capability.schemas.job.properties.status.enum: published adds 'paused'" in out
    assert "capability.schemas.job.properties.assets.items.properties.download_url: published drops it" in out
    assert "capability.schemas.job.properties.assets.items.properties.href: published adds" in out
    assert KEY not in out + error


def test_it_fails_clearly_when_the_provider_cannot_be_reached(monkeypatch, simulator):
    url = simulator.url
    simulator.stop()
    out, error = run_check(monkeypatch, url)
    assert error.startswith(f"Cannot reach the provider at {url}/v1/discovery")
    assert KEY not in out + error


def test_it_fails_clearly_when_the_provider_refuses_the_key(monkeypatch, simulator):
    monkeypatch.setenv("INFRAI_API_KEY", "wrong-" + KEY)
    out = StringIO()
    with pytest.raises(CommandError, match="answered 401") as refused:
        call_command("check_provider_contract", "--base-url", simulator.url, stdout=out)
    assert KEY not in out.getvalue() + str(refused.value)


def test_it_refuses_to_check_without_a_provider_url(monkeypatch):
    out, error = run_check(monkeypatch, None)
    assert "INFRAI_BASE_URL" in error
