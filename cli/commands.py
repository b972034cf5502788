"""Argument parsing and exit codes for init, import and analyze: 0 done, 1 refused (bad input), 2 usage.

A package of its own because the commands span three others (reviews, ingest, analysis): every import
here points down, and none of those imports a command."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from ..authoring.presets import PRESETS, write_starter
from ..authoring.profile import ProfileError, load_profile

DATA_DIR_ENV = "REVIEWSD_DATA_DIR"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 on usage errors: keep that, one line
        self.exit(2, f"{self.prog}: {message}\n")


def _parser(command: str, description: str) -> argparse.ArgumentParser:
    parser = _Parser(prog=f"reviewsd {command}", description=description)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get(DATA_DIR_ENV) or "data"),
        help=f"the data directory (default: ${DATA_DIR_ENV} or data)",
    )
    return parser


def _refuse(command: str, message: str) -> int:
    print(f"reviewsd {command}: {message}", file=sys.stderr)
    return 1


def init_main(argv: Sequence[str]) -> int:
    """`reviewsd init --preset NAME [--data-dir DIR]`: write a commented starter business.toml."""
    parser = _parser("init", "Write a starter business.toml for your trade into the data directory.")
    parser.add_argument("--preset", required=True, choices=sorted(PRESETS))
    args = parser.parse_args(argv)
    try:
        path = write_starter(args.data_dir, args.preset)
    except FileExistsError:
        return _refuse(
            "init", f"{args.data_dir / 'business.toml'} exists; not overwritten (edit it, or move it)"
        )
    except OSError as error:
        return _refuse("init", f"cannot write {args.data_dir / 'business.toml'}: {error}")
    print(f"wrote {path}: edit [business], then run `reviewsd import FILE...` and `reviewsd analyze`")
    return 0


def import_main(argv: Sequence[str]) -> int:
    """`reviewsd import [--data-dir DIR] FILE...`: merge exports into DIR/reviews.json."""
    from ..ingest.records import InputError
    from ..ingest.run import import_files

    parser = _parser(
        "import",
        "Merge review exports (Google Business Profile or Takeout, Trustpilot, CSV) into reviews.json.",
    )
    parser.add_argument(
        "files",
        nargs="*",
        type=Path,
        metavar="FILE",
        help="exports to merge; none: only rewrite the business block from business.toml",
    )
    args = parser.parse_args(argv)
    try:
        profile = load_profile(args.data_dir)
        result = import_files(args.data_dir, args.files, profile)
    except (ProfileError, InputError) as error:
        return _refuse("import", f"{error}; nothing written")
    except OSError as error:
        return _refuse("import", f"cannot write {args.data_dir}: {error}")
    print(f"{args.data_dir / 'reviews.json'}: {result.summary()}")
    return 0


def analyze_main(argv: Sequence[str]) -> int:
    """`reviewsd analyze [--data-dir DIR] [--explain REVIEW_ID]`: derive insights.json from reviews.json."""
    from ..analysis.run import AnalysisError, analyze_dir, explain_review

    parser = _parser("analyze", "Derive insights.json from reviews.json and business.toml.")
    parser.add_argument(
        "--explain",
        metavar="REVIEW_ID",
        help="print why one review got its mentions and sentiments; write nothing",
    )
    args = parser.parse_args(argv)
    try:
        profile = load_profile(args.data_dir)
        if args.explain:
            print(explain_review(args.data_dir, profile, args.explain), end="")
            return 0
        line = analyze_dir(args.data_dir, profile)
    except (ProfileError, AnalysisError) as error:
        return _refuse("analyze", str(error))
    except OSError as error:
        return _refuse("analyze", f"cannot write {args.data_dir}: {error}")
    print(line)
    return 0
