"""What `reviewsd sync` costs a business: requests and seconds, first and incremental, against the stand-in.

    python bench/sync_requests.py [--reviews 5000] [--new 5]

The stand-in for Google's API (tests/support/platform_api.py) on 127.0.0.1 holds that many reviews; the
first sync reads them all (pages of 50), then NEW reviews arrive and one is edited, and a second sync
reads what changed. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.platform_api import (  # noqa: E402
    ACCOUNT,
    CLIENT,
    LOCATION,
    REFRESH_TOKEN,
    PlatformApi,
    PlatformState,
    google_review,
    stamp,
)

from reviewsd_app.authoring.profile import load_profile  # noqa: E402
from reviewsd_app.ingest.fetch import Http  # noqa: E402
from reviewsd_app.ingest.sync import Endpoints, sync_dir  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reviews", type=int, default=5000)
    parser.add_argument("--new", type=int, default=5)
    args = parser.parse_args()
    # Spread over the days before today: the importer refuses dates after tomorrow.
    api = PlatformApi(
        PlatformState(google=[google_review(n, day=n * 600 // args.reviews) for n in range(args.reviews)])
    )
    try:
        data = Path(tempfile.mkdtemp(prefix="reviewsd-sync-bench-"))
        source = f'\n[[sources]]\ntype = "google"\naccount = "{ACCOUNT}"\nlocation = "{LOCATION}"\n'
        source += 'credentials = "c.json"\n'
        sample_profile = (ROOT / "data" / "business.toml").read_text("utf-8")
        (data / "business.toml").write_text(sample_profile + source, "utf-8")
        (data / "c.json").write_text(json.dumps({**CLIENT, "refresh_token": REFRESH_TOKEN}), "utf-8")
        (data / "c.json").chmod(0o600)
        profile, endpoints = load_profile(data), Endpoints.from_environ(api.environ())
        for label in ("first sync", "incremental"):
            if label == "incremental":
                api.state.google += [google_review(args.reviews + n, day=620) for n in range(args.new)]
                api.state.google[3]["updateTime"] = stamp(621)
            api.state.log.clear()
            started = time.perf_counter()
            result = sync_dir(data, profile, endpoints, Http())
            took = time.perf_counter() - started
            pages, tokens = api.state.requests("/v4/"), api.state.requests("/token")
            print(
                f"{label:12} {args.reviews:,} reviews held: {pages} review requests + {tokens} token "
                f"request, {took:.2f} s ({result.merged.summary()})"
            )
    finally:
        api.stop()


if __name__ == "__main__":
    main()
