"""Analysing many reviews under one profile: one at a time in this process, or in slices in forked worker
processes, in the reviews' order either way."""

from __future__ import annotations

import math
import multiprocessing
import os
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..authoring.profile import Profile
from . import aggregate
from .features import role_words
from .lexicon import Scorer
from .matcher import Matcher, labels_by_group
from .model import Model, shipped_model
from .quotes import best_quotes, naming_staff, pull_candidate
from .review import ReviewAnalysis, analyse_review, apply_corrections


class AnalysisError(ValueError):
    """The inputs cannot be analysed: the message names the file and what is wrong."""


def _check_corrections(profile: Profile) -> None:
    known = {group: {r["id"] for r in records} for group, records in labels_by_group(profile).items()}
    for index, correction in enumerate(profile.corrections):
        if correction["id"] not in known[correction["group"]]:
            raise AnalysisError(
                f"business.toml: corrections[{index}]: {correction['id']!r} is not one of the "
                f"profile's {correction['group']}"
            )


def staff_roles(profile: Profile) -> dict[str, tuple[str, ...]]:
    """Each practitioner's role words, for the aspect heads ("Receptionist": front desk)."""
    return {p["id"]: role_words(p.get("role") or "") for p in profile.practitioners}


def staff_pronouns(profile: Profile) -> dict[str, str]:
    """The pronoun business.toml gives each practitioner that has one: "she/her" and "she" are "she"."""
    return {p["id"]: p["pronouns"].split("/")[0] for p in profile.practitioners if p.get("pronouns")}


class _Analyser:
    """What analysing a review under one profile needs, built once: one review at a time, corrected, or None
    when business.toml hides it."""

    def __init__(self, profile: Profile, model: Model, reasons: int) -> None:
        self.matcher = Matcher(profile)
        self.scorer = Scorer.for_overrides(profile.sentiment_overrides)
        self.model = model
        self.aspect_ids = tuple(aspect["id"] for aspect in profile.aspects)
        model.prepare(self.aspect_ids)  # here, before workers fork, so that they share it (Model.prepare)
        self.roles = staff_roles(profile)
        self.pronouns = staff_pronouns(profile)
        self.reasons = reasons
        self.hidden = profile.hide_reviews
        self.people_published = profile.publish.get("people", True)
        self.corrections: dict[str, list] = defaultdict(list)
        for correction in profile.corrections:
            self.corrections[correction["review_id"]].append(correction)

    def __call__(self, review: Mapping[str, Any]) -> ReviewAnalysis | None:
        if review["id"] in self.hidden:
            return None
        analysis = analyse_review(
            review,
            self.matcher,
            self.scorer,
            self.model,
            self.aspect_ids,
            reasons=self.reasons,
            roles=self.roles,
            pronouns=self.pronouns,
        )
        left_out = frozenset() if self.people_published else naming_staff(analysis.found)
        analysis.quotes = best_quotes(analysis.sentences, analysis.found, left_out)
        analysis.pull = pull_candidate(review["rating"], analysis.sentences, analysis.found, left_out)
        apply_corrections(analysis, self.corrections.get(review["id"], []))
        return analysis


# Each worker holds about 10 to 70 MiB more than the last (what it touches of the parent's model and reviews
# is copied): summed PSS with model 2.9 at 10,000 reviews 214 MiB in one process, 276 with two workers, 348
# with four, 494 with eight; at 100,000 reviews 753, 823 and 848 with one, two and four
# (bench/analysis_speed.py --memory; before the profile's heads were made ahead of the fork, 202, 374, 555
# and 914, and 720, 871 and 1058). By default no more than DEFAULT_JOBS_MAX, so that a machine of many cores
# stays within reviewsd-sync.service's MemoryMax=1G; --jobs asks for more.
DEFAULT_JOBS_MAX = 4


def default_jobs() -> int:
    """How many processes analyze uses unless --jobs says: the usable CPUs, DEFAULT_JOBS_MAX at most."""
    return min(usable_cores(), DEFAULT_JOBS_MAX)


def usable_cores() -> int:
    """The CPUs this process may run on: its affinity (taskset, systemd's CPUAffinity=, a cpuset), and no
    more than a cgroup v2 CPU quota allows (systemd's CPUQuota=, docker --cpus), rounded up."""
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:
        cores = os.cpu_count() or 1
    quota = cpu_quota()
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return cores


def cpu_quota(
    proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = Path("/sys/fs/cgroup")
) -> float | None:
    """The CPUs' worth of time this process's cgroup v2 and its parents allow (cpu.max), the smallest; None
    without a quota or a cgroup v2 (cgroup v1's cpu.cfs_quota_us is not read)."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    paths = [line[3:] for line in lines if line.startswith("0::")]
    if not paths:
        return None
    directory = root / paths[0].lstrip("/")
    if not directory.is_dir():  # a cgroup namespace shows the process's own cgroup as the root
        directory = root
    smallest = None
    while True:
        try:
            limit, period = (directory / "cpu.max").read_text().split()
            if limit != "max":
                allowed = int(limit) / int(period)
                smallest = allowed if smallest is None else min(smallest, allowed)
        except (OSError, ValueError):
            pass  # no cpu controller at this level
        if directory == root or directory.parent == directory:
            return smallest
        directory = directory.parent


# Analysing is pure Python, so more cores need more processes. The reviews go out in slices of about
# SLICE_CHARACTERS of text (about 500 reviews of the sample's length; an analysis takes time in proportion to
# its text, plus a little for the review itself) and come back in order, so the result is the same; one
# slice stays in this process. Measured on 2 cores, one process against two: 500 reviews 0.45-0.57 s either
# way, 750 0.76-0.85 s against 0.61-0.73 s, 1,000 0.89-1.05 s against 0.69-0.73 s.
SLICE_CHARACTERS = 250_000
REVIEW_CHARACTERS = 100  # what a review costs beyond its text, in characters of text
_worker: tuple[_Analyser, Sequence[Mapping[str, Any]]] | None = None  # set in each worker process


def _slices(reviews: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """(start, stop) of consecutive reviews with about SLICE_CHARACTERS of text each, in order."""
    slices, start, size = [], 0, 0
    for index, review in enumerate(reviews):
        size += len(review["text"] or "") + REVIEW_CHARACTERS
        if size >= SLICE_CHARACTERS:
            slices.append((start, index + 1))
            start, size = index + 1, 0
    if start < len(reviews):
        slices.append((start, len(reviews)))
    return slices


def _start_worker(analyser: _Analyser, reviews: Sequence[Mapping[str, Any]]) -> None:
    global _worker
    _worker = (analyser, reviews)


def _analyse_slice(start: int, stop: int) -> list[tuple[int, ReviewAnalysis]]:
    """In a worker: reviews[start:stop] not hidden, by index, each with only what the insights read."""
    assert _worker is not None
    analyser, reviews = _worker
    analysed = []
    for index in range(start, stop):
        analysis = analyser(reviews[index])
        if analysis is not None:
            sent = analysis.for_insights()
            sent.review = {}  # the parent has it: joined again by index, not pickled twice
            analysed.append((index, sent))
    return analysed


def _analyse_in_processes(
    reviews: Sequence[Mapping[str, Any]], analyser: _Analyser, jobs: int, slices: list[tuple[int, int]]
) -> list[ReviewAnalysis] | None:
    """The analyses from up to `jobs` worker processes, a slice at a time, in the reviews' order; None where
    no pool can start."""
    # fork: the workers share the parent's loaded model and reviews instead of loading and pickling them
    # (the model alone takes 0.3 s to load). Only the offline commands come here, with no other threads.
    context = multiprocessing.get_context("fork")
    starts, stops = [start for start, _ in slices], [stop for _, stop in slices]
    workers = min(jobs, len(slices))
    try:
        pool = ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start_worker, initargs=(analyser, reviews)
        )
    except OSError:  # no POSIX semaphores (some containers have no /dev/shm): one process will do
        return None
    analyses = []
    try:
        with pool:
            for analysed in pool.map(_analyse_slice, starts, stops):
                for index, analysis in analysed:
                    analysis.review = reviews[index]
                    analyses.append(analysis)
    except BrokenProcessPool:
        raise AnalysisError(
            f"a worker process of the {workers} analysing the reviews stopped (out of memory?); "
            "nothing written; try --jobs 1"
        ) from None
    return analyses


def analyse_reviews(
    reviews: Sequence[Mapping[str, Any]],
    profile: Profile,
    model: Model | None = None,
    reasons: int = 0,
    jobs: int = 1,
    for_insights: bool = False,
) -> list[ReviewAnalysis]:
    """Every review not hidden, analysed and corrected, newest first (by the shipped model unless given).
    for_insights: each analysis keeps only what the insights read (ReviewAnalysis.for_insights), so memory
    holds one whole analysis at a time; then with jobs > 1, in up to that many processes where the platform
    can fork and start them and there is text enough for more than one slice."""
    _check_corrections(profile)
    analyser = _Analyser(profile, model or shipped_model(), reasons)
    forkable = "fork" in multiprocessing.get_all_start_methods()
    analyses = None
    if for_insights and jobs > 1 and forkable:
        slices = _slices(reviews)
        if len(slices) > 1:
            analyses = _analyse_in_processes(reviews, analyser, jobs, slices)
    if analyses is None:
        analyses = []
        for review in reviews:
            analysis = analyser(review)
            if analysis is not None:
                analyses.append(analysis.for_insights() if for_insights else analysis)
    return aggregate.newest_first(analyses)
