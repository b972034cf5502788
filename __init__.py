"""reviewsd: a read-only API for one business's verified reviews and review insights.

The package `reviewsd_app` (installed, or this checkout run by `python reviewsd.py`). Its layout and
wiring: docs/internals.md. `main` is the `reviewsd` command.
"""

from __future__ import annotations

import sys


def main() -> int:
    """The `reviewsd` command: `reviewsd [serve] [OPTION ...]`, `reviewsd check`, `reviewsd --version`."""
    from .httpserver.service import install_early_signals  # light: the standard library only

    offline = (["check"], ["init"], ["import"], ["analyze"], ["sync"], ["notify"])
    install_early_signals(keep_hup=sys.argv[1:2] not in offline)
    from .reviewsd import main as run  # after the signals: the imports take a few tenths of a second

    return run()
