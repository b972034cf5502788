"""Events out (issue 37): a real SMTP server for the alerts (the `mailbox` fixture), the test secret, and the
check of an event against its JSON Schema."""

from __future__ import annotations

import base64
import email
import socket
import threading
from typing import Iterator

import jsonschema_rs
import pytest
from aiosmtpd.controller import Controller

from reviewsd_app.reviews.validation import REGISTRY, SCHEMAS

SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()


class Mailbox:
    """An SMTP server on 127.0.0.1 that keeps every message it is given."""

    def __init__(self) -> None:
        self.messages: list[email.message.Message] = []
        self._lock = threading.Lock()
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)

    async def handle_DATA(self, server, session, envelope) -> str:  # noqa: N802 (aiosmtpd's name)
        with self._lock:
            self.messages.append(email.message_from_bytes(envelope.content))
        return "250 OK"

    def received(self) -> list[email.message.Message]:
        with self._lock:
            return list(self.messages)


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    box = Mailbox()
    box.controller.start()
    yield box
    box.controller.stop()


def check_event(event: dict) -> None:
    """Valid against schemas/webhook-event.schema.json and its type's entry there, as the OpenAPI says."""
    name = "".join(part.capitalize() for part in event["type"].split("."))
    schema_id = SCHEMAS["webhook-event.schema.json"]["$id"]
    schema = {"allOf": [{"$ref": schema_id}, {"$ref": f"{schema_id}#/$defs/{name}"}]}
    jsonschema_rs.Draft202012Validator(schema, registry=REGISTRY, validate_formats=True).validate(event)
