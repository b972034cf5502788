"""`python -m reviewsd_app`: the `reviewsd` command."""

import sys

from . import main

sys.exit(main())
