"""`reviewsd notify test [--notify FILE]`: one sample event to every target, each outcome printed."""

from __future__ import annotations

import sys
import time
from typing import Sequence

from ..config import PROG, parse_config
from ..websub.client import Outbound
from .config import NotifyConfigError, load_notify
from .notifier import attempt
from .payloads import encode, new_event_id, sample_event

USAGE = f"""usage: {PROG} notify test [--notify FILE] [OPTION ...]

Send one sample event (a made-up 1-star review.created) to every webhook and email alert of the
--notify file (REVIEWSD_NOTIFY), whatever their filters, and print each outcome. The server's options
that delivery uses apply: --allow-private-callbacks, --ca-file, --hub-delivery-timeout, --base-url.
Exit status 0 when every target took it, 1 when one did not, 2 for a bad file or command line."""


def notify_main(argv: Sequence[str]) -> int:
    if list(argv[:1]) in ([], ["-h"], ["--help"]):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] != "test":
        print(f"{PROG} notify: unknown subcommand {argv[0]!r}; the one there is: test", file=sys.stderr)
        return 2
    config = parse_config(argv[1:])
    if not config.notify:
        print(f"{PROG} notify test: give the file with --notify FILE (or REVIEWSD_NOTIFY)", file=sys.stderr)
        return 2
    try:
        notify = load_notify(config.notify)
    except NotifyConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not notify.targets:
        print(f"{notify.path}: no [[webhooks]] or [[alerts]]: nothing to test")
        return 1
    outbound = Outbound(config.ca_file, config.allow_private_callbacks)
    outbound.total_timeout = config.hub_delivery_timeout
    now = time.time()
    body = encode(sample_event(config.public_base_url, now))
    failures = 0
    try:
        for target in notify.targets:
            outcome = attempt(target, notify, config, outbound, new_event_id(), body, now)
            failures += not outcome.ok
            print(f"{target.name}: {'delivered' if outcome.ok else 'FAILED'} ({outcome.description})")
    finally:
        outbound.close()
    return 1 if failures else 0
