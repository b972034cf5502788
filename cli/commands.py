"""Argument parsing and exit codes for init, import and analyze: 0 done, 1 refused (bad input), 2 usage.

A package of its own because the commands span three others (reviews, ingest, analysis): every import
here points down, and none of those imports a command."""

from __future__ import annotations

import argparse
import codecs
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from ..authoring.presets import PRESETS, placeholder_warning, write_starter
from ..authoring.profile import ProfileError, load_profile
from ..authoring.writelock import LockedError, data_dir_lock
from ..config import DATA_DIR_ENV, Config, env_value, resolve_data_dir


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 on usage errors: keep that, one line
        self.exit(2, f"{self.prog}: {message}\n")


def _parser(command: str, description: str) -> argparse.ArgumentParser:
    parser = _Parser(prog=f"reviewsd {command}", description=description)
    parser.add_argument(
        "--data-dir",
        type=Path,
        help=f"the data directory (default: ${DATA_DIR_ENV}, else the bundled sample, which a command "
        "writes only when named)",
    )
    return parser


def jobs_count(text: str) -> int:
    """--jobs: a whole number of processes, 1 or more (an argparse type; the training tools use it too)."""
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"{jobs} is fewer than 1 process")
    return jobs


def _resolve_data_dir(command: str, args: argparse.Namespace, *, writes: bool = True) -> bool:
    """Set args.data_dir by config.resolve_data_dir's rule; False, once the refusal is printed, when a
    command that writes was given neither --data-dir nor REVIEWSD_DATA_DIR."""
    try:
        args.data_dir = resolve_data_dir(args.data_dir, writes=writes)
    except ValueError as error:
        _refuse(command, f"{error}; nothing written")
        return False
    return True


def _refuse(command: str, message: str) -> int:
    print(f"reviewsd {command}: {message}", file=sys.stderr)
    return 1


def init_main(argv: Sequence[str]) -> int:
    """`reviewsd init --preset NAME --data-dir DIR`: write a commented starter business.toml."""
    parser = _parser("init", "Write a starter business.toml for your trade into the data directory.")
    parser.add_argument("--preset", required=True, choices=sorted(PRESETS))
    args = parser.parse_args(argv)
    if not _resolve_data_dir("init", args):
        return 1
    try:
        path = write_starter(args.data_dir, args.preset)
    except FileExistsError:
        return _refuse(
            "init", f"{args.data_dir / 'business.toml'} exists; not overwritten (edit it, or move it)"
        )
    except OSError as error:
        return _refuse("init", f"cannot write {args.data_dir / 'business.toml'}: {error}")
    print(
        f"wrote {path}: edit [business] and [[practitioners]], then "
        f"`reviewsd import --data-dir {args.data_dir} FILE...` and "
        f"`reviewsd analyze --data-dir {args.data_dir}`"
    )
    return 0


def _report_cleanup(command: str, removed: list[Path]) -> None:
    if removed:
        names = ", ".join(path.name for path in removed)
        print(
            f"reviewsd {command}: removed {len(removed)} temporary file(s) an interrupted write left: {names}"
        )


def import_main(argv: Sequence[str]) -> int:
    """`reviewsd import --data-dir DIR [--encoding E] [--date-format F] FILE...`: merge review exports
    into DIR/reviews.json."""
    from ..ingest.records import InputError
    from ..ingest.run import ReadOptions, import_files

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
    parser.add_argument(
        "--encoding", help="the character encoding of CSV files that are not UTF-8 (e.g. cp1252, latin-1)"
    )
    parser.add_argument(
        "--date-format",
        metavar="FORMAT",
        help="how CSV dates are written, in strftime codes (e.g. %%m/%%d/%%Y for 03/09/2024)",
    )
    args = parser.parse_args(argv)
    if not _resolve_data_dir("import", args):
        return 1
    if args.encoding is not None:
        try:
            codecs.lookup(args.encoding)
        except LookupError:
            parser.error(f"--encoding {args.encoding!r} is not an encoding Python knows (e.g. cp1252)")
    if args.date_format is not None and "%" not in args.date_format:
        parser.error(f"--date-format {args.date_format!r} has no %% codes (e.g. %%m/%%d/%%Y)")
    options = ReadOptions(args.encoding, args.date_format)
    try:
        # The server's limit, as its variable sets it: a reviews.json over it would be refused at load.
        max_bytes = env_value("max_data_file_bytes", Config.max_data_file_bytes)
    except ValueError as error:
        parser.error(str(error))
    try:
        profile = load_profile(args.data_dir)
        with data_dir_lock(args.data_dir, "import") as removed:
            _report_cleanup("import", removed)
            result = import_files(args.data_dir, args.files, profile, options, max_bytes)
            for line in result.warnings:
                print(f"reviewsd import: warning: {line}", file=sys.stderr)
            print(f"{args.data_dir / 'reviews.json'}: {result.summary()}")
            placeholders = placeholder_warning(profile, args.data_dir)
            if placeholders:
                print(f"reviewsd import: warning: {placeholders}", file=sys.stderr)
            if result.business_changed:
                return _reanalyze_if_stale(args.data_dir, profile)
    except (ProfileError, InputError, LockedError) as error:
        return _refuse("import", f"{error}; nothing written")
    except OSError as error:
        return _refuse("import", f"cannot write {args.data_dir}: {error}")
    return 0


def _reanalyze_if_stale(data_dir: Path, profile: Any) -> int:
    """After the business block changed (a service renamed), insights.json may name what is gone and the
    server would refuse the directory: analyze again then, and say so."""
    from ..analysis.batch import AnalysisError, default_jobs
    from ..analysis.run import analyze_dir
    from ..reviews.dataset import check_data_dir

    if not (data_dir / "insights.json").exists():
        return 0
    stale = [problem for problem in check_data_dir(data_dir) if problem.file == "insights.json"]
    if not stale:
        return 0
    print(f"reviewsd import: insights.json no longer matches ({stale[0]}); running `reviewsd analyze`")
    try:
        print(analyze_dir(data_dir, profile, jobs=default_jobs()))
    except AnalysisError as error:
        return _refuse("import", f"reviews.json written, but analyze refused: {error}")
    return 0


def analyze_main(argv: Sequence[str]) -> int:
    """`reviewsd analyze --data-dir DIR [--jobs N] [--explain REVIEW_ID]`: derive insights.json from
    reviews.json."""
    from ..analysis.batch import DEFAULT_JOBS_MAX, AnalysisError, default_jobs
    from ..analysis.run import analyze_dir, explain_review

    parser = _parser("analyze", "Derive insights.json from reviews.json and business.toml.")
    parser.add_argument(
        "--explain",
        metavar="REVIEW_ID",
        help="print why one review got its mentions and sentiments; write nothing",
    )
    parser.add_argument(
        "--jobs",
        type=jobs_count,
        default=default_jobs(),
        metavar="N",
        help=f"analyse in up to N processes (default: the CPUs this process may use, at most "
        f"{DEFAULT_JOBS_MAX}; here %(default)s); the result is the same with any N",
    )
    args = parser.parse_args(argv)
    if not _resolve_data_dir("analyze", args, writes=not args.explain):
        return 1
    try:
        profile = load_profile(args.data_dir)
        if args.explain:
            print(explain_review(args.data_dir, profile, args.explain), end="")
            return 0
        with data_dir_lock(args.data_dir, "analyze") as removed:
            _report_cleanup("analyze", removed)
            line = analyze_dir(args.data_dir, profile, jobs=args.jobs)
    except (ProfileError, AnalysisError, LockedError) as error:
        return _refuse("analyze", str(error))
    except OSError as error:
        return _refuse("analyze", f"cannot write {args.data_dir}: {error}")
    print(line)
    return 0


def sync_main(argv: Sequence[str]) -> int:
    """`reviewsd sync --data-dir DIR [--full]`: pull new and edited reviews from business.toml's [[sources]],
    merge them into reviews.json, then analyze."""
    from ..analysis.batch import AnalysisError, default_jobs
    from ..analysis.run import analyze_dir
    from ..ingest.fetch import Http
    from ..ingest.records import InputError
    from ..ingest.sync import Endpoints, SyncError, sync_dir

    parser = _parser(
        "sync",
        "Pull new and edited reviews from the platforms' APIs listed in business.toml's [[sources]], "
        "merge them into reviews.json and analyze.",
    )
    parser.add_argument(
        "--full", action="store_true", help="read every page, not only what is new since the last sync"
    )
    args = parser.parse_args(argv)
    if not _resolve_data_dir("sync", args):
        return 1
    try:
        endpoints = Endpoints.from_environ(os.environ)
        profile = load_profile(args.data_dir, required=True)
        if not profile.sources:
            return _refuse(
                "sync",
                f"{args.data_dir / 'business.toml'} lists no [[sources]]; see docs/deployment.md; "
                "nothing written",
            )
        with data_dir_lock(args.data_dir, "sync") as removed:
            _report_cleanup("sync", removed)
            result = sync_dir(args.data_dir, profile, endpoints, Http(), full=args.full)
            for pulled in result.pulled:
                print(f"{pulled.label}: {len(pulled.reviews)} reviews read in {pulled.pages} page(s)")
            for line in result.merged.warnings:
                print(f"reviewsd sync: warning: {line}", file=sys.stderr)
            print(f"{args.data_dir / 'reviews.json'}: {result.merged.summary()}")
            merged = result.merged
            stale = merged.new or merged.updated or merged.business_changed
            if stale or not (args.data_dir / "insights.json").exists():
                print(analyze_dir(args.data_dir, profile, jobs=default_jobs()))
    except (ProfileError, SyncError, InputError, LockedError) as error:
        return _refuse("sync", f"{error}; nothing written")
    except AnalysisError as error:
        return _refuse("sync", f"reviews.json written, but analyze refused: {error}")
    except OSError as error:
        return _refuse("sync", f"cannot write {args.data_dir}: {error}")
    return 0
