"""reviewsd's WSGI app for gunicorn, as bench/compare hosts it.

    gunicorn --workers 1 --worker-class gthread --threads 8 'gunicorn_app:build()'

`reviewsd.create_app` takes a Config, so this factory builds one from the
environment bench/compare sets: REVIEWSD_COMPARE_DATA_DIR, _STATE_DIR and
_BASE_URL (the same base URL as the reviewsd it is compared with, so that
feeds and Link headers are the same bytes). The hub is off, as on the
reviewsd under test (--no-hub); data is not polled (--reload-interval 0).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from reviewsd_app import reviewsd  # noqa: E402


def build() -> reviewsd.ReviewsApp:
    config = reviewsd.Config(
        data_dir=os.environ["REVIEWSD_COMPARE_DATA_DIR"],
        state_dir=os.environ["REVIEWSD_COMPARE_STATE_DIR"],
        base_url=os.environ["REVIEWSD_COMPARE_BASE_URL"],
        hub=False,
        reload_interval=0,
    )
    return reviewsd.create_app(config)
