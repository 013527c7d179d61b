"""Folds shared by every cross-validation (``folds.stratified_folds``): balanced, repeatable, and
bad arguments refused instead of truncated (RELIABILITY.md)."""

import numpy as np
import pytest

import qsg_jax
from qsg_jax import baselines
from qsg_jax import direct
from qsg_jax import folds
from qsg_jax import roc_svm
from tests import _bad_inputs as toy
from tests.conftest import raises_short

Y = toy.Y_30                       # 15 points per class


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


def test_check_grid_names_the_key_of_a_nested_or_non_numeric_value():
  """A nested list, a dict or an object in a grid is a short error naming the key (it used to be
  float()'s TypeError without the key)."""
  grid = {"lam": [0.1], "sigma": [0.5], "gamma": [0.5]}
  for bad in ([[0.1]], [{"a": 1}], [object()], [0.1, [0.2]]):
    with pytest.raises(ValueError, match=r"grid\['lam'\] must be a non-empty list of numbers"):
      folds.check_grid(dict(grid, lam=bad), "direct")


def test_copies_of_a_labeled_point_share_a_fold_and_plain_data_keeps_its_folds():
  """Copies of a (point, label) (oversampled classes, records entered twice) used to be dealt to
  different folds, so a held-out row's copy trained the model that scored it. With ``points``
  every copy group is in one fold, each fold still holds every class, and data without copies
  get exactly the folds of ``points=None`` (reference: the same call without points)."""
  rng = np.random.default_rng(0)
  x = rng.random((40, 3))
  y = (np.arange(40) % 2).astype(int)
  np.testing.assert_array_equal(folds.stratified_folds(y, 4, 3, points=x),
                                folds.stratified_folds(y, 4, 3))
  repeats = rng.integers(1, 5, size=40)                     # 1 to 4 copies of each row
  xs, ys = np.repeat(x, repeats, axis=0), np.repeat(y, repeats)
  order = rng.permutation(xs.shape[0])
  xs, ys = xs[order], ys[order]
  groups = folds.copy_groups(xs, ys)
  assert groups.max() + 1 == 40
  fold_ids = folds.stratified_folds(ys, 4, 3, points=xs)
  for g in range(40):
    assert np.unique(fold_ids[groups == g]).size == 1
  for c in (0, 1):
    assert np.unique(fold_ids[ys == c]).size == 4
  sizes = np.bincount(fold_ids, minlength=4)
  assert sizes.max() - sizes.min() <= 2 * repeats.max()
  # Copies are per (point, label): the same point under two labels is two groups.
  assert folds.copy_groups(np.zeros((2, 1)), [0, 1]).tolist() == [0, 1]
  # Grouping reads each column relative to its span: an affine rescaling groups alike.
  np.testing.assert_array_equal(folds.copy_groups(xs * [1e3, 1e-3, 2] + 7, ys), groups)


def test_too_few_distinct_points_for_the_folds_is_said_with_copies():
  x = np.repeat(np.linspace(0, 1, 12)[:, None], [1] * 9 + [3, 3, 3], axis=0)
  y = np.repeat([0] * 9 + [1] * 3, [1] * 9 + [3, 3, 3])
  folds.stratified_folds(y, 4)                              # 9 rows of class 1 without points
  raises_short(ValueError, r"at most the smallest labeled class size 3 distinct points \(copies "
               r"of a point share a fold\)", folds.stratified_folds, y, 4, 0, x)
  x = np.r_[np.linspace(0, 1, 11), [0.5] * 4][:, None]
  raises_short(ValueError, r"Class 1 has a single distinct labeled point", folds.stratified_folds,
               np.r_[[0] * 11, [1] * 4], 2, 0, x)


def test_repeats_of_few_valued_features_are_observations_not_copies():
  """Answers, counts, indicators: every row repeats some other. Grouped by (row, label) the
  cell's two labels went to different folds, so each held-out row was scored by its cell's other
  label (cross-validated AUC 0.04 on two binary features) and the automatic choice kept one row
  per (cell, class), dropping the frequencies that are the signal. Such rows are no copies."""
  rng = np.random.default_rng(0)
  for levels, d in ((2, 2), (6, 3), (256, 3)):
    x = rng.integers(0, levels, (300, d)).astype(float)
    y = rng.integers(0, 2, 300)
    np.testing.assert_array_equal(folds.copy_groups(x, y), np.arange(300))
    np.testing.assert_array_equal(folds.stratified_folds(y, 5, 0, points=x),
                                  folds.stratified_folds(y, 5, 0))
  x = rng.integers(0, 2, (300, 2)).astype(float)
  y = (rng.random(300) < 0.2 + 0.6 * x[:, 0]).astype(int)
  result = qsg_jax.cross_validate(x, y, None, grid=dict(lam=[1e-3], sigma=[0.5], gamma=[1.0]),
                                  num_folds=5, key=0, solver="direct")
  assert result.best_score > 0.6                            # the attainable AUC is about 0.8


def test_copies_are_rows_equal_on_a_fine_grid_and_distinct_rows_are_not_chained():
  """A tolerance (1e-4 of the span on four offset grids, linked in chains) merged distinct
  neighbours of dense data (30,000 distinct rows: about 15,000 groups) and, with a heavy-tailed
  column, incomes 20,710 to 26,515 into one "copy". Copies are now rows equal on one grid of 1e-6
  of each column's span, no chains: a float32 round trip is a copy, 1e-5 apart is not."""
  rng = np.random.default_rng(1)
  x = rng.random((60, 20))
  y = (x[:, 0] > 0.5).astype(int)
  np.testing.assert_array_equal(folds.copy_groups(np.r_[x, x.astype(np.float32)], np.r_[y, y]),
                                np.r_[np.arange(60), np.arange(60)])   # a float32 round trip
  np.testing.assert_array_equal(folds.copy_groups(np.r_[x, x + 1e-5], np.r_[y, y]),
                                np.arange(120))
  dense = np.c_[rng.random(30000), rng.integers(0, 3, 30000)]   # a few pairs 1e-6 apart tie
  assert folds.copy_groups(dense, rng.integers(0, 2, 30000)).max() + 1 > 29_850
  income = np.c_[2e4 * rng.pareto(1.5, 2000) + 2e4, rng.integers(18, 80, 2000)]
  np.testing.assert_array_equal(folds.copy_groups(income, np.zeros(2000)), np.arange(2000))


def test_folds_check_their_points():
  y = np.arange(12) % 2
  x = np.linspace(0, 1, 12)[:, None]
  raises_short(ValueError, r"points .*NaN", folds.stratified_folds, y, 2, 0,
               np.where(np.arange(12)[:, None] == 3, np.nan, x))
  raises_short(ValueError, r"points must have one row per label \(12\); received 11 rows",
               folds.stratified_folds, y, 2, 0, x[:11])


def _copies_data(rep):
  rng = np.random.default_rng(0)
  x = rng.random((60, 4)).astype(np.float32)
  y = (x[:, 0] + 0.5 * rng.normal(size=60) > 0.5).astype(int)
  return np.repeat(x, rep, axis=0), np.repeat(y, rep)


@pytest.mark.parametrize("solver", ["direct", "dsg"])
def test_cross_validation_of_copied_rows_is_not_a_lookup_table(solver):
  """Every labeled row given 3 times: with copies split over folds the narrowest kernel scored
  a validation AUC of 1.00 and won (a lookup table; 0.50 on the rows given once). Grouped,
  the choice is that of the rows given once and the narrow kernel stays far from 1."""
  grid = dict(lam=[1e-3], sigma=[0.5, 500.0], gamma=[1.0])
  once, thrice = (qsg_jax.cross_validate(*_copies_data(rep), None, grid=grid, num_folds=3,
                                         key=0, solver=solver) for rep in (1, 3))
  assert thrice.best["sigma"] == once.best["sigma"] == 0.5
  assert thrice.scores.ravel()[1] < 0.8
  assert abs(thrice.best_score - once.best_score) < 0.05


@pytest.mark.parametrize("entry", ["dsg", "direct", "baselines", "roc_svm"])
def test_every_cross_validation_groups_copies(entry, monkeypatch):
  """Each CV entry point deals its folds with the labeled points (``points=``), so copies
  share a fold (spy on ``folds.stratified_folds``)."""
  seen = []
  real = folds.stratified_folds

  def spy(labels, num_folds, seed=0, points=None):
    seen.append(points)
    return real(labels, num_folds, seed, points=points)

  monkeypatch.setattr(folds, "stratified_folds", spy)
  x, y = _copies_data(2)
  x_u = x[:20]
  if entry == "dsg":                                          # qsg_jax.cross_validate's own
    qsg_jax.cross_validate(x, y, x_u, grid=dict(lam=[1.0], sigma=[0.5], gamma=[1.0]),
                           num_folds=2, key=0, solver="dsg", num_steps=16)
  elif entry == "direct":
    direct.cross_validate(x, y, x_u, grid=dict(lam=[1.0], sigma=[0.5], gamma=[1.0]),
                          num_folds=2, num_features=16)
  elif entry == "baselines":
    baselines.cross_validate("pnu_auc", x[:40], y[:40], x_u, quick=True, num_folds=2)
  else:
    roc_svm.cross_validate(x, 2 * y - 1, [dict(lam=1.0)], num_folds=2, max_steps=5)
  assert seen and all(p is not None and np.asarray(p).shape[0] == np.asarray(
      seen[0]).shape[0] for p in seen)
