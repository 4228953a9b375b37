"""A service account's own webhook endpoint over the API: register it (the signing secret shown once), read it,
remove it. The admin sets the same field; both check the URL with `accounts.webhook_url_check`."""

from django.core.exceptions import ValidationError
from ninja import Router, Schema, Status
from pydantic import ConfigDict, Field

from ..accounts import URL_MAX, ServiceAccount
from ..api import error, errors
from .events import WebhookEvent

router = Router(tags=["webhooks"])


class WebhookEndpointIn(Schema):
    """Unknown fields are refused (400 naming them in `pointer`), as an unknown multipart part is."""

    model_config = ConfigDict(extra="forbid")
    # Its length is checked with the URL's other checks, so a long one gets their code (`webhook_url_too_long`).
    url: str = Field(description=f"http:// or https://, at most {URL_MAX} characters, not an internal address")


class WebhookEndpointOut(Schema):
    url: str
    events: list[WebhookEvent.Type]
    secret: str | None = Field(
        description="The Standard Webhooks signing secret (`whsec_...`): only in the answer that issued it, once. "
        "Later answers say null; ask staff for a new one if it was lost."
    )


def _endpoint(account: ServiceAccount, secret: str | None = None) -> dict:
    return {"url": account.webhook_url, "events": list(WebhookEvent.Type), "secret": secret}


@router.put(
    "/webhook-endpoint",
    response={200: WebhookEndpointOut, **errors(400, 411, 413)},
    summary="Register this account's webhook URL (the signing secret is answered once, with the first URL)",
)
def register_webhook(request, endpoint: WebhookEndpointIn):
    """Events (job.completed, job.failed, submission.refused) are POSTed to `url` from now on, signed as Standard
    Webhooks (docs/api.md#webhooks). A URL that is not http(s), or names an internal address, is 400 naming the
    reason in `code` and `/url` in `pointer`."""
    account = request.auth
    try:
        secret = account.register_webhook(endpoint.url, by=f"api:{account.name}")
    except ValidationError as refusal:
        return error(request, 400, refusal.code or "bad_request", " ".join(refusal.messages), pointer="/url")
    return _endpoint(account, secret)


@router.get(
    "/webhook-endpoint",
    response={200: WebhookEndpointOut, **errors(404)},
    summary="This account's webhook URL (404 when none is registered)",
)
def get_webhook(request):
    account = request.auth
    if not account.webhook_url:
        return error(request, 404, "not_found", "This service account has no webhook URL registered.")
    return _endpoint(account)


@router.delete(
    "/webhook-endpoint", response={204: None, **errors(404)}, summary="Stop sending this account webhook events"
)
def remove_webhook(request):
    """Events already recorded give up at their next try; the secret is kept for a URL registered again."""
    if not request.auth.remove_webhook(by=f"api:{request.auth.name}"):
        return error(request, 404, "not_found", "This service account has no webhook URL registered.")
    return Status(204, None)
