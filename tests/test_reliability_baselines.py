"""Bad arguments of the folds, the baselines' cross-validation and the ordinal thresholds.

``folds.stratified_folds`` (shared by every cross-validation), ``baselines.cross_validate`` and
the kernel fits refuse counts that are not whole numbers, seeds that would not repeat and labels
without a class, instead of truncating them or leaving rows without a fold;
``thresholds.fit_thresholds`` refuses a missing class and mismatched shapes. Inputs are tiny and
most errors are raised before anything is compiled.
"""

import jax
import numpy as np
import pytest

from qsg_jax import baselines
from qsg_jax import folds
from qsg_jax import thresholds
from tests.conftest import raises_short

RNG = np.random.default_rng(0)
Y = np.arange(30) % 2                       # 15 points per class
X_L = RNG.uniform(size=(30, 2)).astype(np.float32)
X_U = RNG.uniform(size=(10, 2)).astype(np.float32)
GRID = {"lam": [1.0], "sigma": [1.0], "gamma": [0.5]}
SCORES = np.array([0.1, 0.5, 0.9, 0.2, 0.3, 0.8], np.float32)


# ---- folds.stratified_folds ---------------------------------------------------------------------

@pytest.mark.parametrize("args, error, pattern", [
    ((Y, 2.5), TypeError, r"num_folds must be a whole number >= 2; received 2\.5.*num_folds=5"),
    ((Y, None), TypeError, r"num_folds must be a whole number >= 2; received None"),
    ((Y, "3"), TypeError, r"num_folds must be a whole number >= 2; received '3'"),
    ((Y, 1), ValueError, r"num_folds must be a whole number >= 2; received 1"),
    ((Y, 16), ValueError, r"at most the smallest labeled class size 15 \(class counts \[15, 15\]"),
    ((Y, 2, None), TypeError, r"seed must be a whole number >= 0; received None\. None would draw "
                              r"different folds on every call"),
    ((Y, 2, -1), ValueError, r"seed must be a whole number >= 0; received -1.*seed=0"),
    ((Y, 2, 1.5), TypeError, r"seed must be a whole number >= 0; received 1\.5"),
    ((np.where(np.arange(30) == 3, np.nan, Y), 2), ValueError,
     r"labels contain 1 NaN or infinite values \(first at row 3\)\. Every point needs a class"),
    ((np.where(np.arange(30) == 4, np.inf, Y), 2), ValueError, r"first at row 4"),
    ((Y + 0.5, 2), ValueError,
     r"labels must be whole numbers \(class ids\); received 0\.5 at row 0"),
    ((np.array(["a", "b"] * 15), 2), TypeError, r"labels must be whole numbers.*dtype <U1"),
    ((Y[:, None], 2), ValueError, r"labels must be a non-empty vector \[n\]; received shape"),
])
def test_stratified_folds_refuses_bad_arguments(args, error, pattern):
  raises_short(error, pattern, folds.stratified_folds, *args)


def test_stratified_folds_gives_every_row_a_fold_of_balanced_size():
  for labels, num_folds in ((Y, 2), (Y.astype(bool), 3), (Y.astype(np.float64), 2.0),
                            (np.arange(31) % 3, 4)):
    fold_ids = folds.stratified_folds(labels, num_folds, seed=np.int64(3))
    sizes = np.bincount(fold_ids)
    assert fold_ids.min() >= 0 and sizes.size == int(num_folds), (fold_ids, num_folds)
    assert sizes.max() - sizes.min() <= 1
    for c in np.unique(labels):    # each class dealt over every fold
      assert np.unique(fold_ids[labels == c]).size == int(num_folds)
  np.testing.assert_array_equal(folds.stratified_folds(Y, 3, 7), folds.stratified_folds(Y, 3, 7))


# ---- baselines.cross_validate ----------------------------------------------------------------

@pytest.mark.parametrize("changes, error, pattern", [
    (dict(seed=None), TypeError, r"seed must be a whole number >= 0; received None"),
    (dict(seed=-1), ValueError, r"seed must be a whole number >= 0; received -1"),
    (dict(seed=1.5), TypeError, r"seed must be a whole number >= 0; received 1\.5"),
    (dict(num_folds=2.5), TypeError, r"num_folds must be a whole number >= 2; received 2\.5"),
    (dict(num_folds=None), TypeError, r"num_folds must be a whole number >= 2; received None"),
    (dict(batch_bytes=2.5), TypeError, r"batch_bytes must be a whole number >= 1; received 2\.5"),
    (dict(memory_fraction=1.5), ValueError, r"memory_fraction must be a number in \(0, 1\]"),
    (dict(memory_fraction=None), TypeError, r"memory_fraction must be a number in \(0, 1\]"),
    (dict(per_split="yes"), TypeError, r"per_split must be True or False"),
    (dict(quick=None), TypeError, r"quick must be True or False"),
])
def test_cross_validate_checks_arguments_before_any_kernel(changes, error, pattern):
  args = dict(grid=GRID, num_folds=3)
  args.update(changes)
  raises_short(error, pattern, baselines.cross_validate, "samult", X_L, Y, X_U, **args)


def test_cross_validate_with_a_seed_repeats_its_scores():
  first = baselines.cross_validate("samult", X_L, Y, X_U, grid=GRID, num_folds=3, seed=1)
  again = baselines.cross_validate("samult", X_L, Y, X_U, grid=GRID, num_folds=3, seed=1)
  np.testing.assert_array_equal(first.fold_scores, again.fold_scores)


def test_kernel_fits_name_hyperparameters_that_are_not_numbers():
  raises_short(TypeError, r"lam must be a number or a list of k-1 = 1 numbers; received None",
               baselines.fit_samult, X_L, Y, X_U, lam=None, sigma=1.0, gamma=0.5)
  raises_short(TypeError, r"sigma must be a number or a list.*received 'wide'",
               baselines.fit_samult,
               X_L, Y, X_U, lam=1.0, sigma="wide", gamma=0.5)
  raises_short(ValueError, r"memory_fraction must be a number in \(0, 1\]", baselines.fit_samult,
               X_L, Y, X_U, lam=1.0, sigma=1.0, gamma=0.5, memory_fraction=2.0)
  model = baselines.fit_samult(X_L, Y, None, lam=1.0, sigma=1.0, gamma=1.0)
  raises_short(TypeError, r"chunk_size must be a whole number >= 1 or None; received 2\.5",
               baselines.decision_function, model, X_L, chunk_size=2.5)
  np.testing.assert_allclose(baselines.decision_function(model, X_L, chunk_size=7),
                             baselines.decision_function(model, X_L), rtol=1e-5, atol=1e-6)


# ---- thresholds ------------------------------------------------------------------------------

@pytest.mark.parametrize("labels, num_classes, pattern", [
    (np.array([0, 0, 2, 0, 2, 2]), 3, r"class\(es\) \[1\] have no point \(counts per class: "
                                      r"\[3, 0, 3\]\)"),
    (np.zeros(6, int), 3, r"class\(es\) \[1, 2\] have no point"),
    (np.ones(6, int), 2, r"class\(es\) \[0\] have no point"),
])
def test_fit_thresholds_refuses_a_missing_class(labels, num_classes, pattern):
  raises_short(ValueError, r"fit_thresholds needs every class 0\.\.\d among the labels.*" + pattern,
               thresholds.fit_thresholds, SCORES, labels, num_classes)


@pytest.mark.parametrize("scores, labels", [
    (SCORES, np.array([0, 1, 0, 1, 1])),
    (np.stack([SCORES, SCORES], axis=1), np.array([0, 1, 0, 1, 1, 0])),
    (SCORES[:, None], np.array([0, 1, 0, 1, 1, 0])),
])
def test_fit_thresholds_refuses_mismatched_shapes(scores, labels):
  raises_short(ValueError, r"scores and labels must both have shape \[n\].*received \(",
               thresholds.fit_thresholds, scores, labels, 2)


def test_fit_thresholds_with_every_class_is_unchanged_and_jittable():
  labels = np.array([0, 1, 2, 0, 1, 2])
  np.testing.assert_allclose(thresholds.fit_thresholds(SCORES, labels, 3), [0.25, 0.65])
  jitted = jax.jit(thresholds.fit_thresholds, static_argnums=2)(SCORES, labels, 3)
  np.testing.assert_allclose(jitted, [0.25, 0.65])


@pytest.mark.parametrize("bad", [np.array(["0.5"]), ["low", "high"], np.array([None, 0.5])])
def test_predict_classes_refuses_thresholds_that_are_not_numbers(bad):
  raises_short(TypeError, r"thresholds must be real numbers; received dtype",
               thresholds.predict_classes, SCORES, bad)
  raises_short(TypeError, r"scores must be real numbers; received dtype",
               thresholds.predict_classes, bad, np.array([0.5]))
