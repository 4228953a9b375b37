"""One error shape naming the field at fault (`parameter` or `pointer`), multipart parts other than one `file`
refused, and a case label that differs on a replay: refused with a key, said without one."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase

from extraction.models import Bundle, Submission
from tests import pdfs
from tests.extraction.test_api import auth, post_pdf, submitted, token  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def refusal(response, status: int = 400) -> dict:
    assert response.status_code == status, response.content
    return response.json()["error"]


@pytest.mark.parametrize(
    "path, parameter",
    [
        ("/api/v1/jobs?limit=0", "limit"),
        ("/api/v1/jobs?offset=106609033060356590170867236864", "offset"),
        ("/api/v1/jobs?state=nope", "state"),
        ("/api/v1/jobs?since=yesterday", "since"),
        ("/api/v1/jobs?status=failed", "status"),
        ("/api/v1/jobs/abc", "job_id"),
        ("/api/v1/log/consistency?first=1&second=01", "second"),
    ],
)
def test_a_refused_parameter_is_named_and_the_message_is_a_sentence(client, token, path, parameter):  # noqa: F811
    error = refusal(client.get(path, **auth(token)))
    assert (error["code"], error["parameter"]) == ("bad_request", parameter) and "pointer" not in error
    assert error["message"].endswith(".") and "{" not in error["message"] and "loc" not in error["message"]


def test_a_validation_message_says_where_and_what(client, token):  # noqa: F811
    error = refusal(client.get("/api/v1/jobs?limit=0", **auth(token)))
    assert error["message"] == "The query parameter 'limit' is not valid: input should be greater than or equal to 1."


def test_an_error_about_no_one_field_names_none(client, token):  # noqa: F811
    error = refusal(client.get("/api/v1/jobs/999", **auth(token)), 404)
    assert set(error) == {"code", "message"}


def test_a_too_long_idempotency_key_names_the_header(client, token, tmp_path):  # noqa: F811
    response = post_pdf(client, token, pdfs.jpeg_rgb(tmp_path).read_bytes(), key="k" * 201)
    assert refusal(response)["parameter"] == "Idempotency-Key"


def post_parts(client, token, parts: dict):  # noqa: F811
    return client.post("/api/v1/bundles", parts, **auth(token))


def pdf_part(tmp_path, name: str = "claim.pdf") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, pdfs.jpeg_rgb(tmp_path).read_bytes(), content_type="application/pdf")


@pytest.mark.parametrize("field", ["fiel", "case_label", "note"])
def test_a_multipart_part_other_than_file_is_refused_naming_it(client, token, tmp_path, field):  # noqa: F811
    error = refusal(post_parts(client, token, {"file": pdf_part(tmp_path), field: "claim-7"}))
    assert (error["code"], error["pointer"]) == ("bad_request", field) and f"'{field}'" in error["message"]
    assert not Submission.objects.exists()


def test_a_case_label_part_is_told_to_use_the_query(client, token, tmp_path):  # noqa: F811
    error = refusal(post_parts(client, token, {"file": pdf_part(tmp_path), "case_label": "claim-7"}))
    assert "?case_label=" in error["message"]


def test_two_file_parts_are_refused(client, token, tmp_path):  # noqa: F811
    error = refusal(post_parts(client, token, {"file": [pdf_part(tmp_path, "a.pdf"), pdf_part(tmp_path, "b.pdf")]}))
    assert error["pointer"] == "file" and not Submission.objects.exists()


def test_a_file_part_that_is_no_file_is_refused(client, token):  # noqa: F811
    assert refusal(post_parts(client, token, {"file": "%PDF-1.7 typed into a form"}))["pointer"] == "file"


def test_one_file_part_still_passes(client, token, tmp_path):  # noqa: F811
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post("/api/v1/bundles?case_label=claim-7", {"file": pdf_part(tmp_path)}, **auth(token))
    assert response.status_code == 202


# ---------- a case label that differs on a replay ----------


def test_an_idempotency_key_replayed_with_another_case_label_is_a_conflict(client, token, tmp_path):  # noqa: F811
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    first = post_pdf(client, token, data, key="k-1", QUERY_STRING="case_label=claim-7")
    again = post_pdf(client, token, data, key="k-1", QUERY_STRING="case_label=claim-7")
    other = post_pdf(client, token, data, key="k-1", QUERY_STRING="case_label=claim-8")
    assert (first.status_code, again.json()["id"]) == (202, first.json()["id"])
    assert refusal(other, 422)["code"] == "idempotency_conflict" and Submission.objects.count() == 1


def test_an_idempotency_key_without_a_label_replays_as_before(client, token, tmp_path):  # noqa: F811
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    first = post_pdf(client, token, data, key="k-1")
    labelled = post_pdf(client, token, data, key="k-1", QUERY_STRING="case_label=claim-7")
    assert post_pdf(client, token, data, key="k-1").json()["id"] == first.json()["id"]
    assert refusal(labelled, 422)["code"] == "idempotency_conflict"


def test_the_same_bytes_under_another_label_get_the_job_and_say_the_label_was_not_taken(client, token, tmp_path):  # noqa: F811
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    first = submitted(client, token, data, QUERY_STRING="case_label=claim-7")
    again = submitted(client, token, data, QUERY_STRING="case_label=claim-8")
    assert (first["case_label"], first["case_label_ignored"]) == ("claim-7", False)
    assert (again["case_label"], again["case_label_ignored"], again["created"]) == ("claim-8", True, False)
    assert again["job"]["id"] == first["job"]["id"] and again["job"]["case_label"] == "claim-7"
    assert Bundle.objects.get().case_label == "claim-7"


def test_the_same_bytes_under_the_same_label_are_no_news(client, token, tmp_path):  # noqa: F811
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    submitted(client, token, data, QUERY_STRING="case_label=claim-7")
    assert submitted(client, token, data, QUERY_STRING="case_label=claim-7")["case_label_ignored"] is False
