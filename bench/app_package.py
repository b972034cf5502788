"""Make this checkout importable as the package `reviewsd_app` (the repository root is that package)."""

from __future__ import annotations

import importlib
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ensure_package() -> None:
    """Import reviewsd_app from this checkout: an installed copy elsewhere is not what we measure."""
    try:
        module = importlib.import_module("reviewsd_app")
        if Path(module.__file__).resolve().parent == ROOT:
            return
        for name in [n for n in sys.modules if n == "reviewsd_app" or n.startswith("reviewsd_app.")]:
            del sys.modules[name]
    except ImportError:
        pass
    link_dir = Path(tempfile.mkdtemp(prefix="reviewsd-pkg-"))
    (link_dir / "reviewsd_app").symlink_to(ROOT, target_is_directory=True)
    sys.path.insert(0, str(link_dir))
    importlib.import_module("reviewsd_app")
