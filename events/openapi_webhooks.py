"""The OpenAPI document's `webhooks` section (openapi.py): what a receiver of `standard` webhooks gets.

Beside the events it describes; the schemas it names are schemas/webhook-event.schema.json's, which the
document holds as the component WebhookEvent.
"""

from __future__ import annotations

from typing import Any


def _ref(name: str, *pointer: str) -> dict[str, str]:
    return {"$ref": "/".join(["#/components/schemas", name, *pointer])}


def _header(name: str, description: str, required: bool) -> dict[str, Any]:
    return {
        "name": name,
        "in": "header",
        "required": required,
        "schema": {"type": "string"},
        "description": description,
    }


# What a `standard` webhook receives (events/, docs/events.md): type -> (operationId, $defs entry, summary).
WEBHOOK_EVENTS = {
    "review.created": ("reviewCreated", "ReviewCreated", "A review reviewsd had not seen"),
    "review.updated": ("reviewUpdated", "ReviewUpdated", "A review's rating, text or owner reply changed"),
    "review.deleted": ("reviewDeleted", "ReviewDeleted", "A review left the data"),
    "insights.updated": ("insightsUpdated", "InsightsUpdated", "insights.json changed"),
}
WEBHOOK_HEADERS = [
    _header("webhook-id", "The event's id: the same on every retry (an idempotency key).", True),
    _header("webhook-timestamp", "When this attempt was made, in Unix seconds.", True),
    _header(
        "webhook-signature",
        "`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the "
        "decoded `whsec_` secret (Standard Webhooks 1.0).",
        True,
    ),
]


def webhooks_section() -> dict[str, Any]:
    """OpenAPI's `webhooks`: what a receiver of `standard` webhooks gets, as POST requests to its URL."""
    return {
        event: {
            "post": {
                "operationId": operation_id,
                "tags": ["events"],
                "summary": summary,
                "description": f"`{event}`, signed as Standard Webhooks 1.0 says; docs/events.md shows "
                "how to verify it. Sent to the webhooks of the --notify file whose `events` and rating "
                "filters let it through.",
                "parameters": WEBHOOK_HEADERS,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"allOf": [_ref("WebhookEvent"), _ref("WebhookEvent", "$defs", name)]}
                        }
                    },
                },
                "responses": {
                    "200": {"description": "Received (any 2xx): the delivery is done."},
                    "410": {"description": "Gone: never sent again; the delivery is recorded as failed."},
                    "4XX": {"description": "Refused: retried with backoff for [delivery] retry_for."},
                    "5XX": {"description": "Failed: retried with backoff for [delivery] retry_for."},
                },
            }
        }
        for event, (operation_id, name, summary) in WEBHOOK_EVENTS.items()
    }
