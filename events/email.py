"""Sending one alert message with smtplib: STARTTLS (verified) and login when configured, bounded time."""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage
from typing import NamedTuple

from .config import Smtp


class Outcome(NamedTuple):
    """What one attempt came to: delivered, or why not and whether trying again can help."""

    ok: bool
    description: str
    permanent: bool = False


def send_mail(smtp: Smtp, message: EmailMessage, timeout: float, ca_file: str = "") -> Outcome:
    """Send `message` through the [smtp] server; never raises for network or SMTP trouble."""
    try:
        with smtplib.SMTP(smtp.host, smtp.port, timeout=timeout) as client:
            if smtp.starttls:
                client.starttls(context=ssl.create_default_context(cafile=ca_file or None))
            if smtp.username:
                client.login(smtp.username, smtp.password)
            refused = client.send_message(message)
    except smtplib.SMTPRecipientsRefused as exc:
        codes = sorted({code for code, _ in exc.recipients.values()})
        return Outcome(False, f"every recipient refused (SMTP {codes})", all(c >= 500 for c in codes))
    except smtplib.SMTPResponseException as exc:
        # 5xx: the server will not take it as it is (bad sender, login refused); 4xx: try again later.
        return Outcome(False, f"SMTP {exc.smtp_code}", exc.smtp_code >= 500)
    except (OSError, smtplib.SMTPException, ssl.SSLError) as exc:
        return Outcome(False, f"{type(exc).__name__}: {exc}"[:200])
    if refused:
        return Outcome(True, f"sent; refused for {len(refused)} of the recipients")
    return Outcome(True, "sent")
