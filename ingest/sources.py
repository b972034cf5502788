"""What an import argument stands for, read with bounds: a file, a Takeout folder, a Takeout .zip.

Only regular files are read (a FIFO or /dev/zero behind a name would hang or fill memory), each file and
each zip member is capped before and while it is read (a zip's header may lie about a member's size), and
every way an archive can be unreadable (encrypted, deflate64, damaged) is the same one-line refusal."""

from __future__ import annotations

import lzma
import os
import stat
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator

from .records import InputError

# One export file or zip member, and all the reviews*.json of one archive together. A Google export of
# 100,000 reviews is about 60 MB; parsing takes several times a file's size in memory.
MAX_EXPORT_BYTES = 256 << 20
KNOWN = (
    "a Google Business Profile or Trustpilot reviews JSON, a Takeout folder or .zip, or a CSV "
    "with author,rating,date,text"
)
_CHUNK = 1 << 20
_ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
# What zipfile and its decompressors raise on an archive they cannot read.
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError)
_ZIP_ERRORS += (zlib.error, lzma.LZMAError, ValueError)


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
    kinds += ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((kind for test, kind in kinds if test(mode)), "a special file")


def open_regular(path: Path) -> tuple[BinaryIO, int]:
    """The open file and its size; InputError unless `path` is (or links to) a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO's open waits otherwise
    except OSError as error:
        raise InputError(f"{path}: cannot be read: {error.strerror or error}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise InputError(f"{path}: {_kind(info.st_mode)}, not a regular file; nothing read")
    os.set_blocking(fd, True)
    return open(fd, "rb"), info.st_size


def read_capped(stream: BinaryIO, name: str, cap: int = MAX_EXPORT_BYTES) -> bytes:
    """At most `cap` bytes of `stream`; InputError naming the cap when there are more."""
    parts, total = [], 0
    while chunk := stream.read(min(_CHUNK, cap + 1 - total)):
        parts.append(chunk)
        total += len(chunk)
        if total > cap:
            raise InputError(f"{name}: over the limit of {cap:,} bytes for one export; nothing read")
    return b"".join(parts)


def _too_big(name: str, size: int, cap: int) -> InputError:
    return InputError(f"{name}: {size:,} bytes is over the limit of {cap:,} bytes for one export")


def read_export_file(path: Path, cap: int = MAX_EXPORT_BYTES) -> bytes:
    """A regular file's bytes, its size checked before reading and while reading."""
    stream, size = open_regular(path)
    with stream:
        if size > cap:
            raise _too_big(str(path), size, cap)
        try:
            return read_capped(stream, str(path), cap)
        except OSError as error:
            raise InputError(f"{path}: cannot be read: {error.strerror or error}") from None


def is_review_member(name: str) -> bool:
    """A Takeout's reviews file: Business Profile writes reviews.json (reviews-1.json, ...) per location."""
    base = name.rsplit("/", 1)[-1]
    return base.startswith("reviews") and base.endswith(".json")


def folder_review_files(path: Path) -> list[Path]:
    return sorted(p for p in Path(path).rglob("reviews*.json") if is_review_member(p.name))


def _archive_members(archive: zipfile.ZipFile, label: str, cap: int) -> Iterator[tuple[str, bytes]]:
    members = sorted(
        (i for i in archive.infolist() if is_review_member(i.filename)), key=lambda i: i.filename
    )
    if not members:
        raise InputError(f"{label}: no reviews*.json in this archive; expected {KNOWN}")
    declared = 0
    for info in members:
        name = f"{label}!{info.filename}"
        if info.flag_bits & 0x1:
            raise InputError(f"{name}: encrypted; unzip it yourself and import the folder")
        if info.compress_type not in _ZIP_METHODS:
            raise InputError(
                f"{name}: compression method {info.compress_type} is not supported (stored, deflate, bzip2, "
                "lzma are); unzip it yourself and import the folder"
            )
        declared += info.file_size
        if declared > cap:
            raise _too_big(name, declared, cap)
    total = 0
    for info in members:
        name = f"{label}!{info.filename}"
        with archive.open(info) as member:
            data = read_capped(member, name, cap - total)  # a header that lies about sizes stops here
        total += len(data)
        yield name, data


def export_sources(path: Path, cap: int = MAX_EXPORT_BYTES) -> Iterator[tuple[str, bytes]]:
    """(name for errors, content) of each file an argument stands for: itself, or a Takeout's reviews."""
    path = Path(path)
    if path.is_dir():
        files = folder_review_files(path)
        if not files:
            raise InputError(f"{path}: no reviews*.json in this folder; expected {KNOWN}")
        declared = sum(file.stat().st_size for file in files)  # together, as an archive's members
        if declared > cap:
            raise InputError(
                f"{path}: its reviews*.json hold {declared:,} bytes together, over the limit of {cap:,} "
                "bytes for one export"
            )
        total = 0
        for file in files:
            data = read_export_file(file, cap - total)
            total += len(data)
            yield str(file), data
        return
    stream, size = open_regular(path)
    with stream:
        try:
            is_zip = zipfile.is_zipfile(stream)
            stream.seek(0)
        except OSError as error:
            raise InputError(f"{path}: cannot be read: {error.strerror or error}") from None
        if not is_zip:
            if size > cap:
                raise _too_big(str(path), size, cap)
            try:
                data = read_capped(stream, str(path), cap)
            except OSError as error:
                raise InputError(f"{path}: cannot be read: {error.strerror or error}") from None
            yield str(path), data
            return
        try:
            with zipfile.ZipFile(stream) as archive:
                yield from _archive_members(archive, str(path), cap)
        except InputError:
            raise
        except _ZIP_ERRORS + (OSError,) as error:
            raise InputError(f"{path}: cannot be read as a zip archive: {str(error)[:200]}") from None
