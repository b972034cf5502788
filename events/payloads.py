"""The events and what each target receives: the Standard Webhooks body and signature, a Slack message,
an email (pure functions; schemas/webhook-event.schema.json is the contract)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from datetime import datetime, timezone
from email.message import EmailMessage
from typing import Any, Mapping

import orjson

TEXT_IN_MESSAGES = 300  # characters of a review's text in a Slack message (the whole text is in the email)


def new_event_id() -> str:
    """A webhook-id: unique, and without `.` (it is part of the signed content)."""
    return "evt_" + secrets.token_hex(16)


def utc_text(seconds: float) -> str:
    """RFC 3339 UTC, to the millisecond."""
    return (
        datetime.fromtimestamp(seconds, timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def review_event(
    event_type: str,
    review: Mapping[str, Any],
    business: Mapping[str, Any],
    page_url: str | None,
    at: float,
    changes: list[str] | None = None,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """review.created, review.updated (with `changes` and the `previous` values) or review.deleted."""
    data: dict[str, Any] = {"business": {"id": business["id"], "name": business["name"]}, "review": review}
    if page_url is not None:
        data["url"] = page_url
    if changes is not None:
        data["changes"] = changes
        data["previous"] = {name: (previous or {}).get(name) for name in changes}
    return {"type": event_type, "timestamp": utc_text(at), "data": data}


def insights_event(insights: Mapping[str, Any], business: Mapping[str, Any], url: str, at: float) -> dict:
    data = {
        "business": {"id": business["id"], "name": business["name"]},
        "url": url,
        "generated_at": insights["generated_at"],
        "review_count": insights["review_count"],
        "overall_sentiment": insights["overall_sentiment"],
    }
    return {"type": "insights.updated", "timestamp": utc_text(at), "data": data}


def encode(event: Mapping[str, Any]) -> bytes:
    return orjson.dumps(event)


def signature(key: bytes, event_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks v1: base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the decoded secret."""
    signed = event_id.encode() + b"." + str(timestamp).encode() + b"." + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def standard_headers(key: bytes, event_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The headers of one attempt: the same webhook-id on every retry, the attempt's own timestamp."""
    return {
        "Content-Type": "application/json",
        "webhook-id": event_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(key, event_id, timestamp, body),
    }


def stars(rating: int) -> str:
    return "★" * rating + "☆" * (5 - rating)


def shortened(text: str | None, limit: int = TEXT_IN_MESSAGES) -> str:
    if not text:
        return "(no text: a rating only)"
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _slack_escaped(text: str) -> str:
    """Slack's three control characters in message text (its "mrkdwn")."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def headline(event: Mapping[str, Any]) -> str:
    """One line saying what happened: the email's subject, the Slack message's first line."""
    data = event["data"]
    business = data["business"]["name"]
    if event["type"] == "insights.updated":
        return f"Review insights of {business} updated ({data['review_count']} reviews)"
    review = data["review"]
    who = f"{review['rating']}-star review of {business} by {review['author']}"
    if event["type"] == "review.created":
        return f"New {who}"
    if event["type"] == "review.deleted":
        return f"Removed: the {who}"
    changes = []
    for name in data["changes"]:
        if name == "rating":
            changes.append(f"rating {data['previous']['rating']} → {review['rating']}")
        else:
            changes.append(name.replace("_", " "))
    return f"Changed ({', '.join(changes)}): the {who}"


def slack_body(event: Mapping[str, Any]) -> bytes:
    """An incoming-webhook message (Slack; Mattermost and Discord's /slack endpoint read the same)."""
    data = event["data"]
    lines = [f"*{_slack_escaped(headline(event))}*"]
    if event["type"] == "insights.updated":
        score = data["overall_sentiment"]["score"]
        lines.append(f"Overall sentiment {score:+.2f}. <{data['url']}|Open insights.json>")
    else:
        review = data["review"]
        lines.append(f"{stars(review['rating'])} {_slack_escaped(review['author'])}, {review['date']}")
        text = _slack_escaped(shortened(review["text"])).replace("\n", "\n>")
        lines.append(f">{text}")
        reply = "has an owner reply" if review["owner_reply"] else "no reply yet"
        link = f"<{data['url']}|Open the review> · " if "url" in data else ""
        lines.append(f"{link}{reply}")
    return orjson.dumps({"text": "\n".join(lines)})


def email_message(event: Mapping[str, Any], sender: str, to: tuple[str, ...]) -> EmailMessage:
    """One plain-text message: stars, author, date, the text, the link, how to answer."""
    data = event["data"]
    message = EmailMessage()
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Subject"] = headline(event)
    if event["type"] == "insights.updated":
        score = data["overall_sentiment"]["score"]
        body = [
            f"The review insights were derived again on {data['generated_at']}: {data['review_count']} "
            f"reviews, overall sentiment {score:+.2f}.",
            "",
            f"Read them: {data['url']}",
        ]
    else:
        review = data["review"]
        body = [
            f"{stars(review['rating'])} ({review['rating']} of 5)",
            f"From: {review['author']}, {review['date']}, on {review['source']}",
            "",
            review["text"] or "(no text: a rating only)",
            "",
        ]
        if "url" in data:
            body.append(f"Read it: {data['url']}")
        if event["type"] != "review.deleted":
            where = review["source_url"] or f"on {review['source']}"
            if review["owner_reply"]:
                body.append(f"It has your reply of {review['owner_reply']['date']}.")
            else:
                body.append(
                    f"To answer it, reply where it was posted ({where}); your reply appears here after "
                    "the next import."
                )
    body += ["", "-- ", "Sent by reviewsd: the [[alerts]] of its --notify file."]
    message.set_content("\n".join(body) + "\n")
    return message


def sample_event(base_url: str, at: float) -> dict[str, Any]:
    """What `reviewsd notify test` sends: a made-up 1-star review (it passes every rating filter's spirit)."""
    review = {
        "id": "0000000000000000000TEST000",
        "author": "A. Sample (a test from reviewsd notify test)",
        "author_avatar_url": None,
        "rating": 1,
        "date": utc_text(at)[:10],
        "text": "This is a sample event sent by `reviewsd notify test`; no customer wrote it.",
        "source": "reviewsd",
        "source_url": None,
        "owner_reply": None,
        "verified": False,
    }
    business = {"id": "sample", "name": "reviewsd notify test"}
    return review_event("review.created", review, business, base_url + "/reviews/" + review["id"], at)
