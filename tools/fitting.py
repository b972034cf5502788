"""The trainer's fits (tools/train_model.py): logistic regressions over sparse matrices, the 3-fold choice of
each one's regularisation, and running many fits at once in forked processes, each with one BLAS thread.
Needs the `train` extra (scikit-learn, numpy, scipy)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Mapping, Sequence


def matrix(rows: Sequence[dict[str, float]], vocabulary: dict[str, int]) -> Any:
    """The rows as a sparse matrix, a column per feature of the vocabulary (the others left out)."""
    from scipy.sparse import csr_matrix

    data, columns, pointers = [], [], [0]
    for row in rows:
        for feature, value in sorted(row.items()):
            column = vocabulary.get(feature)
            if column is not None:
                data.append(value)
                columns.append(column)
        pointers.append(len(data))
    return csr_matrix((data, columns, pointers), shape=(len(rows), len(vocabulary)))


def logistic(c: float) -> Any:
    """A binary logistic regression (a multiclass fit is one per class: _fit_scaled_one_vs_rest)."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, solver="liblinear", max_iter=1000, tol=1e-4, random_state=0)


# The matrices the fits read, by name: set before the worker processes fork, so that they share them instead
# of each fit pickling its rows.
_MATRICES: dict[str, Any] = {}


@dataclass(frozen=True)
class Fit:
    """One logistic regression: trained on rows of a shared matrix and, for a fold of cross-validation,
    scored on `test` rows; with none, the model to keep."""

    matrix: str
    train: tuple[int, ...]
    labels: tuple
    c: float
    multiclass: bool
    test: tuple[int, ...] = ()
    # a multiclass fit: the name of a shared boolean array, the columns to scale by their Naive Bayes ratios
    # (one binary model per class: _fit_scaled_one_vs_rest)
    scaled: str = ""


@dataclass(frozen=True)
class Fitted:
    """What a fit gives back: the test rows' predictions (and, binary, their probability of True), or the
    model's weights."""

    predicted: list
    probabilities: list
    intercept: Any = None
    coef: Any = None
    classes: tuple = ()


def naive_bayes_ratios(presence: Any, is_class: Any, scaled: Any) -> Any:
    """Each column's Naive Bayes log-count ratio for one class against the others (add-one smoothed), for the
    columns `scaled` marks; 1 for the others. Wang and Manning's NBSVM: the ratio scales a feature before the
    logistic regression reads it, so that a word seen mostly with one class starts with a lean of its own."""
    import numpy as np

    inside = 1 + np.asarray(presence[is_class].sum(axis=0)).ravel()
    outside = 1 + np.asarray(presence[~is_class].sum(axis=0)).ravel()
    ratios = np.log((inside / inside.sum()) / (outside / outside.sum()))
    return np.where(scaled, ratios, 1.0)


def _fit_scaled_one_vs_rest(fit: Fit, rows: Any) -> tuple[Any, Any, tuple]:
    """(intercepts, coefficients, classes) of one binary model per class, each over its Naive Bayes-scaled
    columns, the scale folded into its coefficients: scores of the rows' own features, as the model file
    keeps them."""
    import numpy as np
    from scipy.sparse import diags

    labels = np.array(fit.labels)
    classes = tuple(sorted(set(fit.labels)))
    presence = (rows != 0).astype(float)
    scaled = _MATRICES[fit.scaled]
    intercepts, coefficients = [], []
    for name in classes:
        is_class = labels == name
        scale = naive_bayes_ratios(presence, is_class, scaled)
        model = logistic(fit.c).fit(rows @ diags(scale), is_class)
        intercepts.append(model.intercept_[0])
        coefficients.append(model.coef_[0] * scale)
    return np.array(intercepts), np.vstack(coefficients), classes


def _fit(fit: Fit) -> Fitted:
    shared = _MATRICES[fit.matrix]
    rows = shared[list(fit.train)]
    if fit.multiclass:
        intercept, coef, classes = _fit_scaled_one_vs_rest(fit, rows)
        if not fit.test:
            return Fitted([], [], intercept, coef, classes)
        scores = shared[list(fit.test)] @ coef.T + intercept
        return Fitted([classes[k] for k in scores.argmax(axis=1)], [])
    model = logistic(fit.c).fit(rows, list(fit.labels))
    if not fit.test:
        return Fitted([], [], model.intercept_, model.coef_, tuple(model.classes_))
    test = shared[list(fit.test)]
    column = list(model.classes_).index(True)
    probabilities = [p[column] for p in model.predict_proba(test)]
    return Fitted(list(model.predict(test)), probabilities)


def run_fits(fits: Sequence[Fit], matrices: dict[str, Any], jobs: int) -> list[Fitted]:
    """Each fit's result, in order, from `jobs` forked processes or this one: every fit is independent and
    deterministic, so the model file is the same whatever the number (compared byte for byte)."""
    # loaded here, before any fork, so that workers share them instead of each loading them
    from sklearn.linear_model import LogisticRegression  # noqa: F401
    from threadpoolctl import threadpool_limits  # scikit-learn's own dependency

    _MATRICES.update(matrices)
    # One BLAS thread a process: the solvers' vector operations are too small to share between threads (on
    # two cores, 1,500 reviews trained in 25 s with OpenBLAS's threads, 12 s with one), and OpenBLAS's threads
    # sum in an order that varies from run to run, which changed the model file.
    try:
        with threadpool_limits(limits=1):
            if jobs <= 1 or len(fits) <= 1:
                return [_fit(fit) for fit in fits]
            # fork: the workers share the matrices and the modules loaded
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(min(jobs, len(fits)), mp_context=context) as pool:
                return list(pool.map(_fit, fits))
    finally:
        _MATRICES.clear()


@dataclass(frozen=True)
class Candidate:
    """One model's cross-validation at one regularisation strength: its fold fits, and for each the
    positions of its test rows among the model's labels."""

    model: str
    c: float
    folds: tuple[tuple[Fit, tuple[int, ...]], ...]


def candidate(
    model: str,
    matrix: str,
    rows: Sequence[int],
    labels: Sequence,
    groups: Sequence[int],
    c: float,
    multiclass: bool,
    scaled: str = "",
) -> Candidate:
    """3-fold cross-validation by review (`groups`) of one model at one strength, within `rows` of a matrix
    (`scaled`: as Fit's); a fold whose training part has one label only is left out."""
    folds = []
    for fold in range(3):
        train = [i for i, g in enumerate(groups) if g % 3 != fold]
        test = tuple(i for i, g in enumerate(groups) if g % 3 == fold)
        train_labels = tuple(labels[i] for i in train)
        if len(set(train_labels)) < 2 or not test:
            continue
        train_rows = tuple(rows[i] for i in train)
        test_rows = tuple(rows[i] for i in test)
        fit = Fit(matrix, train_rows, train_labels, c, multiclass, test_rows, scaled)
        folds.append((fit, test))
    return Candidate(model, c, tuple(folds))


def choose_c(
    candidates: Sequence[Candidate], fitted: Mapping[Fit, Fitted], labels: Sequence, multiclass: bool
) -> tuple[float, list[tuple[float, bool, int]]]:
    """The regularisation strength with the best 3-fold accuracy (binary: F1), folds by review, within the
    training data only, the first of equals in the grid's order; for a binary model also its out-of-fold
    (probability, label, position among `labels`) triples."""
    from sklearn.metrics import accuracy_score, f1_score

    best: tuple[float, float, list] = (-1.0, candidates[len(candidates) // 2].c, [])
    for candidate in candidates:
        predicted, truth, scored = [], [], []
        for fit, positions in candidate.folds:
            result = fitted[fit]
            predicted += result.predicted
            truth += [labels[i] for i in positions]
            scored += [(p, labels[i], i) for p, i in zip(result.probabilities, positions)]
        if not truth:
            return best[1], []
        quality = (
            accuracy_score(truth, predicted) if multiclass else f1_score(truth, predicted, pos_label=True)
        )
        if quality > best[0] + 1e-9:
            best = (quality, candidate.c, scored)
    return best[1], best[2]
