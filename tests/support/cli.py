"""`reviewsd check` as the tests run it: in-process (a process each cost 0.3 to 0.7 s of the fast suite),
its exit status and output read as a finished process's. tests/test_cli.py runs the real command."""

from __future__ import annotations

import io
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from reviewsd_app import reviewsd


def check(data_dir: Path | str) -> subprocess.CompletedProcess:
    args = ["check", "--data-dir", str(data_dir)]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = reviewsd.check_main(args[1:])
    return subprocess.CompletedProcess(["reviewsd.py", *args], status, out.getvalue(), err.getvalue())
