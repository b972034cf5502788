"""The WSGI entry for other servers: `gunicorn 'reviewsd_app.wsgi:app'` hosts reviewsd from an install.

Importing this module builds `app` the way the `reviewsd` command builds its own: the configuration from
the REVIEWSD_* variables (every option has one, read as `reviewsd` reads it; no command line here),
logging set up by `--log-format`'s variable, the data loaded (the import fails, after logging every
problem, if the files are refused), data reloads polled every REVIEWSD_RELOAD_INTERVAL seconds and, unless
REVIEWSD_HUB=false, the WebSub hub started. Both stop when the worker process exits.

Each worker process that imports this module runs its own app, poller and hub, and a hub's state
directory is held by one process at a time: host it in one worker (gunicorn's threads serve concurrent
requests: `--workers 1 --threads 8`), or set REVIEWSD_HUB=false. Don't preload (`--preload` builds the app
in the master, whose threads a fork does not copy). REVIEWSD_BASE_URL must be the URL clients reach (the
default names REVIEWSD_HOST and REVIEWSD_PORT, which the WSGI server's own bind does not change).
docs/configuration.md ("Hosting the app elsewhere") lists what `reviewsd` does and such a server does not.
"""

from __future__ import annotations

import atexit

from .config import parse_config
from .logs import configure_logging
from .reviews.dataset import DataError
from .reviewsd import ReviewsApp, create_app, log_refused_data


def build() -> ReviewsApp:
    """The app of the environment's configuration, its data polled and its hub started, stopped at exit."""
    config = parse_config([])  # the REVIEWSD_* variables, checked as `reviewsd` checks them
    configure_logging(config.log_format)
    try:
        built = create_app(config)
    except DataError as exc:
        log_refused_data(config, exc)
        raise
    built.store.start_polling(config.reload_interval)
    atexit.register(stop, built)
    return built


def stop(built: ReviewsApp) -> None:
    built.store.stop_polling()
    if built.hub is not None:
        built.hub.stop()
    if built.notifier is not None:
        built.notifier.stop()


app = build()
