"""reviewsd as an installed package: the `reviewsd` command.

Installed, the flat modules live together in this package directory, `reviewsd_app/`, so that none
is importable under a generic name (`config`, `server`, ...) from anyone else's code: only the
`reviewsd` command's own process puts the directory on its import path.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    """The `reviewsd` console script: `reviewsd [serve] [OPTION ...]`, `reviewsd check`, `reviewsd --version`."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import reviewsd
    except KeyboardInterrupt:  # Ctrl-C during the imports: as quiet as at any other moment
        return 130
    reviewsd.install_early_signals()
    return reviewsd.main()
