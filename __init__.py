"""reviewsd as an installed package: the `reviewsd` command.

The project's modules are written flat, side by side (`python reviewsd.py` in a checkout).
Installed, they live together in this one package directory, `reviewsd_app/`, with the
schemas, the sample data and the systemd units, so that no module of ours is importable
under a generic name (`config`, `server`, ...) from anyone else's code. Only the `reviewsd`
command's own process puts this directory on its import path.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    """The `reviewsd` console script: `reviewsd [serve] [OPTION ...]`, `reviewsd check`, `reviewsd --version`."""
    sys.path.insert(0, str(HERE))
    try:
        import reviewsd
    except KeyboardInterrupt:  # Ctrl-C during the imports: as quiet as at any other moment
        return 130
    reviewsd.install_early_signals()
    return reviewsd.main()
