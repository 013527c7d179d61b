"""Bad arguments of the ROC-SVM (``roc_svm.fit``, ``ROCSVM``, its cross-validation) are refused.

Counts are whole numbers, never truncated (2.5 used to become 2, True 1); floats are finite and in
range; None only where documented. Every check runs before anything is compiled, so the file runs
in seconds; one tiny fit shows that an integral float (3.0) is still accepted.
"""

import jax
import numpy as np
import pytest

from qsg_jax import roc_svm
from qsg_jax.roc_svm import clustering
from qsg_jax.roc_svm import nystrom
from qsg_jax.roc_svm import pairs as pairs_lib
from tests.conftest import raises_short

RNG = np.random.default_rng(0)
X = RNG.random((60, 3))
Y = (X[:, 0] + 0.3 * RNG.random(60) > 0.6).astype(int)


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(num_pairs=2.5), TypeError, r"num_pairs must be a whole number >= 1 or None.*2\.5"),
    (dict(num_pairs=True), TypeError, r"num_pairs must be a whole number.*received True"),
    (dict(num_pairs="10"), TypeError, r"num_pairs must be a whole number.*'10'"),
    (dict(num_pairs=0), ValueError, r"num_pairs must be a whole number >= 1.*received 0"),
    (dict(kernel="nystrom", num_landmarks=2.5), TypeError,
     r"num_landmarks must be a whole number >= 1; received 2\.5"),
    (dict(kernel="nystrom", num_landmarks=None), TypeError,
     r"num_landmarks must be a whole number >= 1; received None.*num_landmarks=300"),
    (dict(max_steps=2.5), TypeError, r"max_steps must be a whole number >= 1; received 2\.5"),
    (dict(max_steps=None), TypeError, r"max_steps must be a whole number >= 1; received None"),
    (dict(max_steps=0), ValueError, r"max_steps must be a whole number >= 1; received 0"),
    (dict(patience=None), TypeError, r"patience must be a whole number >= 1; received None"),
    (dict(patience=np.nan), TypeError, r"patience must be a whole number >= 1; received nan"),
    (dict(kernel="nystrom", num_landmarks=10, landmarks="kmeans", kmeans_iters=-1), ValueError,
     r"kmeans_iters must be a whole number >= 0; received -1"),
    (dict(kmeans_sample_size=2.5), TypeError, r"kmeans_sample_size must be a whole number"),
    (dict(risk="full", pairs_per_block=1.5), TypeError, r"pairs_per_block must be a whole"),
])
def test_fit_refuses_counts_that_are_not_whole_numbers(changes, error, pattern):
  message = raises_short(error, pattern, roc_svm.fit, X, Y, **changes)
  assert "fractions are never rounded" in message


@pytest.mark.parametrize("tol, error", [
    (-1.0, ValueError), (np.nan, ValueError), (np.inf, ValueError), (None, TypeError),
    ("fast", TypeError), (True, TypeError)])
def test_fit_refuses_a_tol_that_is_not_a_finite_number_at_least_zero(tol, error):
  raises_short(error, r"tol must be a finite number >= 0 .*; received .*tol=1e-6", roc_svm.fit,
               X, Y, tol=tol)


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(target_sensitivity="a"), TypeError, r"target_sensitivity must be a number in \(0, 1\]"),
    (dict(target_sensitivity=np.nan), ValueError, r"target_sensitivity must lie in \(0, 1\]"),
    (dict(target_specificity=1.5), ValueError, r"target_specificity must lie in \(0, 1\]"),
    (dict(optimizer="adamax", learning_rate="fast"), TypeError, r"learning_rate must be a number"),
    (dict(optimizer="adamax", learning_rate=np.nan), ValueError,
     r"learning_rate must be finite and > 0"),
])
def test_fit_refuses_bad_rates_before_training(changes, error, pattern):
  raises_short(error, pattern, roc_svm.fit, X, Y, **changes)


def test_intercept_for_rate_names_a_target_that_is_not_a_number():
  raises_short(TypeError, r"target sensitivity must be a number in \(0, 1\]",
               roc_svm.intercept_for_rate, np.arange(4.0), np.array([0, 1, 0, 1]), "a")
  raises_short(ValueError, r"target specificity must lie in \(0, 1\]", roc_svm.intercept_for_rate,
               np.arange(4.0), np.array([0, 1, 0, 1]), np.nan, "specificity")


def test_an_integral_float_count_is_accepted_as_that_integer():
  result = roc_svm.fit(X, Y, max_steps=3.0, num_pairs=40.0, optimizer="adamax")
  assert result.num_pairs == 40 and 1 <= result.num_steps <= 3


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(kernel="nystrom", num_landmarks=2.5), TypeError,
     r"num_landmarks must be a whole number >= 1; received 2\.5"),
    (dict(kernel="nystrom", num_landmarks=None), TypeError,
     r"num_landmarks must be a whole number >= 1; received None"),
    (dict(num_pairs=2.5), TypeError, r"num_pairs must be a whole number"),
    (dict(max_steps=None), TypeError, r"max_steps must be a whole number >= 1; received None"),
    (dict(max_steps=2.5), TypeError, r"max_steps must be a whole number >= 1; received 2\.5"),
    (dict(tol=np.nan), ValueError, r"tol must be a finite number >= 0"),
    (dict(tol=None), TypeError, r"tol must be a finite number >= 0"),
    (dict(threshold="sensitivity", target_rate="a"), TypeError,
     r"target_rate must be a number in \(0, 1\], e\.g\. 0\.9; received str 'a'"),
    (dict(threshold="sensitivity", target_rate=None), TypeError,
     r"target_rate must be a number in \(0, 1\]"),
    (dict(target_rate=True), TypeError, r"target_rate must be a number"),
    (dict(target_rate=np.nan), ValueError, r"target_rate must lie in \(0, 1\]"),
    (dict(sigma=True), TypeError, r"sigma must be a number > 0 or 'median'; received True"),
    (dict(sigma=None), TypeError, r"sigma must be a number > 0 or 'median'; received None"),
    (dict(lam=-1.0), ValueError, r"lam must be finite and >= 0"),
    (dict(optimizer="adamax", learning_rate=-0.1), ValueError, r"learning_rate must be finite"),
])
def test_estimator_refuses_bad_parameters_before_fitting(changes, error, pattern):
  raises_short(error, pattern, roc_svm.ROCSVM(random_state=0, **changes).fit, X, Y)


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(num_folds=2.5), TypeError, r"num_folds must be a whole number >= 2; received 2\.5"),
    (dict(num_folds=None), TypeError, r"num_folds must be a whole number >= 2; received None"),
    (dict(num_folds=1), ValueError, r"num_folds must be a whole number >= 2; received 1"),
    (dict(seed=None), TypeError, r"seed must be a whole number >= 0; received None\. None would "
                                 r"draw different folds"),
    (dict(seed=-1), ValueError, r"seed must be a whole number >= 0; received -1"),
    (dict(seed=1.5), TypeError, r"seed must be a whole number >= 0; received 1\.5"),
    (dict(grid={"lam": 1e-3}), TypeError, r"grid must be a sequence of dicts"),
])
def test_cross_validate_checks_folds_seed_and_grid_first(changes, error, pattern):
  args = dict(grid=[{"lam": 1e-3}], num_folds=2, seed=0)
  args.update(changes)
  raises_short(error, pattern, roc_svm.cross_validate, X, Y, **args)


def test_building_blocks_refuse_fractional_counts():
  key = jax.random.key(0)
  raises_short(TypeError, r"num_pairs must be a whole number >= 1; received 2\.5",
               pairs_lib.sample_pairs,
               key, 10, 10, 2.5)
  raises_short(TypeError, r"num_landmarks must be a whole number >= 1; received 2\.5",
               nystrom.select_landmarks, key, X, Y, 2.5, "uniform")
  raises_short(ValueError, r"kmeans_iters must be a whole number >= 0; received -1",
               nystrom.select_landmarks, key, X, Y, 5, "kmeans", kmeans_iters=-1)
  raises_short(ValueError, r"max_iters must be a whole number >= 0; received -1",
               clustering.kmeans, key, X.astype(np.float32), 3, max_iters=-1)
