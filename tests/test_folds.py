"""Folds shared by every cross-validation (``folds.stratified_folds``): balanced, repeatable, and
bad arguments refused instead of truncated (RELIABILITY.md)."""

import numpy as np
import pytest

from qsg_jax import folds
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
