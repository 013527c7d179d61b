"""Tests of the papers' preprocessing, the embedded datasets and the synthetic generators."""

import warnings

import jax
import numpy as np
import pytest
from sklearn import datasets as sk_datasets
from sklearn import metrics as sk_metrics
from sklearn import preprocessing as sk_preprocessing

import qsg_jax
from qsg_jax import data
from qsg_jax import metrics
from qsg_jax.data import preprocessing
from tests import _bad_inputs as toy


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
  monkeypatch.setenv("QSG_JAX_CACHE", str(tmp_path / "cache"))
  monkeypatch.setenv("QSG_JAX_DOWNLOAD", "0")


# --- min-max -----------------------------------------------------------------------------------


def test_minmax_matches_sklearn_fitted_on_train_only():
  rng = np.random.default_rng(0)
  train = rng.normal(size=(50, 4)) * [1.0, 10.0, 0.1, 3.0] + [0.0, 5.0, -2.0, 1.0]
  test = rng.normal(size=(30, 4)) * 20.0
  lo, scale = data.minmax_fit(train)
  reference = sk_preprocessing.MinMaxScaler().fit(train)
  np.testing.assert_allclose(data.minmax_apply(train, lo, scale), reference.transform(train),
                             atol=1e-12)
  scaled_test = data.minmax_apply(test, lo, scale)
  np.testing.assert_allclose(scaled_test, reference.transform(test), atol=1e-12)
  # Statistics come from train only: the wider test data leaves [0, 1] and is not clipped.
  assert scaled_test.min() < 0.0 and scaled_test.max() > 1.0
  train_scaled = data.minmax_apply(train, lo, scale)
  np.testing.assert_allclose(train_scaled.min(axis=0), 0.0, atol=1e-12)
  np.testing.assert_allclose(train_scaled.max(axis=0), 1.0, atol=1e-12)


def test_minmax_constant_column_maps_to_zero():
  train = np.array([[1.0, 7.0], [3.0, 7.0], [2.0, 7.0]])
  lo, scale = data.minmax_fit(train)
  np.testing.assert_array_equal(scale, [2.0, 1.0])
  out = data.minmax_apply(np.array([[2.0, 7.0], [2.0, 9.0]]), lo, scale)
  np.testing.assert_array_equal(out, [[0.5, 0.0], [0.5, 2.0]])


def test_minmax_errors():
  with pytest.raises(ValueError, match="NaN or infinite"):
    data.minmax_fit(np.array([[1.0, np.nan], [2.0, 3.0]]))
  with pytest.raises(ValueError, match=r"shape \[n, d\]"):
    data.minmax_fit(np.ones(3))
  lo, scale = data.minmax_fit(np.ones((3, 2)))
  with pytest.raises(ValueError, match="same columns"):
    data.minmax_apply(np.ones((3, 3)), lo, scale)
  lo, scale = data.minmax_fit(np.array([[-1e308, 0.0], [-1e308 + 1e292, 1.0]]))
  with pytest.raises(ValueError, match=r"x\[1, 0\] = 1e\+308 lies so far from the training range"):
    data.minmax_apply(np.array([[0.0, 0.0], [1e308, 0.5]]), lo, scale)   # inf before


# --- equal-frequency discretization --------------------------------------------------------------


def test_discretize_equal_frequency_matches_numpy_quantiles():
  y = np.random.default_rng(1).lognormal(size=10_001)
  labels, edges = data.discretize_equal_frequency(y, 5)
  np.testing.assert_allclose(edges, np.quantile(y, np.linspace(0, 1, 6)))
  counts = np.bincount(labels, minlength=5)
  assert counts.sum() == y.size and np.all(np.abs(counts - y.size / 5) <= 1)
  # Every value lies within its bin's edges (lower edge exclusive except for class 0).
  assert np.all(y <= edges[labels + 1]) and np.all((y > edges[labels]) | (labels == 0))
  # Bins are ordered: a larger target never gets a smaller class.
  order = np.argsort(y)
  assert np.all(np.diff(labels[order]) >= 0)
  np.testing.assert_array_equal(data.discretize_with_edges(y, edges), labels)
  np.testing.assert_array_equal(data.discretize_with_edges([-1.0, 1e9], edges), [0, 4])


def test_discretize_errors():
  with pytest.raises(ValueError, match="too many tied values"):
    data.discretize_equal_frequency(np.r_[np.zeros(90), np.arange(1.0, 11.0)], 5)
  with pytest.raises(ValueError, match="num_bins=5 exceeds the 2 distinct values of y"):
    data.discretize_equal_frequency(np.array([0.0] * 90 + [1.0] * 10), 5)
  with pytest.raises(ValueError, match="num_bins=11 exceeds the 10 distinct values"):
    data.discretize_equal_frequency(np.arange(10.0), 11)   # (was blamed on ties: there are none)
  with pytest.raises(ValueError, match="num_bins must be a whole number >= 2"):
    data.discretize_equal_frequency(np.arange(10.0), 1)
  with pytest.raises(ValueError, match="NaN or infinite"):
    data.discretize_equal_frequency(np.array([1.0, np.inf, 2.0]), 2)
  with pytest.raises(ValueError, match=r"distinct integers beyond 2\*\*53 become equal in float64"):
    data.discretize_equal_frequency(2**60 + np.arange(10, dtype=np.int64), 2)  # not "tied"
  with pytest.raises(ValueError, match=r"y must be a vector \[n\]; received shape \(5, 2\)"):
    data.discretize_with_edges(np.ones((5, 2)), [0.0, 0.5, 1.0])        # 2-D labels before


# --- semi-supervised splits ----------------------------------------------------------------------


def _imbalanced_labels():
  # 5 classes, one of them rare: a uniform draw of 20 labels misses it about 45% of the time.
  return np.repeat(np.arange(5), [400, 300, 200, 97, 3])


@pytest.mark.parametrize("stratify", [False, True])
def test_split_is_disjoint_covering_and_deterministic(stratify):
  y = _imbalanced_labels()
  for seed in range(8):
    split = data.split_semisupervised(seed, y, num_labeled=20, num_test=100, stratify=stratify)
    assert (split.labeled.size, split.test.size, split.unlabeled.size) == (20, 100, 880)
    union = np.concatenate(split)
    np.testing.assert_array_equal(np.sort(union), np.arange(y.size))  # Disjoint and complete.
    np.testing.assert_array_equal(np.unique(y[split.labeled]), np.arange(5))
    again = data.split_semisupervised(seed, y, num_labeled=20, num_test=100, stratify=stratify)
    for a, b in zip(split, again):
      np.testing.assert_array_equal(a, b)
  other = data.split_semisupervised(99, y, num_labeled=20, num_test=100, stratify=stratify)
  assert not np.array_equal(other.labeled, split.labeled)


def test_split_accepts_a_jax_key_like_its_int_seed():
  y = _imbalanced_labels()
  by_int = data.split_semisupervised(7, y, num_labeled=30)
  by_key = data.split_semisupervised(jax.random.key(7), y, num_labeled=30)
  np.testing.assert_array_equal(by_int.labeled, by_key.labeled)
  folded = data.split_semisupervised(jax.random.fold_in(jax.random.key(7), 1), y, num_labeled=30)
  assert not np.array_equal(folded.labeled, by_int.labeled)
  with pytest.raises(TypeError, match="expected an int seed, a jax PRNG key"):
    data.split_semisupervised(0.5, y, num_labeled=30)


def test_distinct_seeds_are_distinct_streams():
  """jax.random.key keeps the low 32 bits: seed 2**32 used to equal seed 0 bit for bit."""
  y = _imbalanced_labels()
  splits = {s: data.split_semisupervised(s, y, num_labeled=30).labeled
            for s in (0, 1, 2**32, 2**32 + 1, 2**63 - 1)}
  assert len({tuple(v) for v in splits.values()}) == len(splits)
  np.testing.assert_array_equal(data.split_semisupervised(np.int64(2**32), y, 30).labeled,
                                splits[2**32])
  assert not np.array_equal(data.make_synthetic_ordinal(2**32, 50, 0).x,
                            data.make_synthetic_ordinal(0, 50, 0).x)
  with pytest.raises(ValueError, match="seed=-1 is out of range"):
    data.split_semisupervised(-1, y, num_labeled=30)
  with pytest.raises(TypeError, match="seed must be an int seed or a jax.random.key; received "
                     "True"):
    data.split_semisupervised(True, y, num_labeled=30)


def test_pandas_nullable_columns_and_other_dtypes():
  """Int64 / Float64 / boolean columns are numbers; pd.NA is a missing value, named as such."""
  import pandas as pd   # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  x = np.round(rng.normal(size=(50, 3)) * 3)
  for frame in (pd.DataFrame(x).astype("Int64"), pd.DataFrame(x).astype("Float64")):
    lo, scale = data.minmax_fit(frame)
    np.testing.assert_array_equal(lo, x.min(axis=0))
    np.testing.assert_array_equal(data.minmax_apply(frame, lo, scale),
                                  data.minmax_apply(x, lo, scale))
  np.testing.assert_array_equal(data.minmax_fit(pd.DataFrame(x > 0).astype("boolean"))[1],
                                [1.0, 1.0, 1.0])
  missing = pd.DataFrame(x).astype("Float64")
  missing.iloc[4, 2] = pd.NA
  with pytest.raises(ValueError, match=r"1 NaN or infinite values in 1 rows \(first at row 4\).*"
                     r"pd.NA"):
    data.minmax_fit(missing)
  with pytest.raises(ValueError, match="first at row 4"):
    data.make_dataset("t", "binary", missing, np.arange(50) % 2)
  with pytest.raises(TypeError, match="non-numeric columns .*encode categorical"):
    data.minmax_fit(pd.DataFrame({"a": pd.Categorical(["u", "v"] * 25)}))
  ds = data.make_dataset("t", "binary", pd.DataFrame(x).astype("Float64"),
                         pd.Series(np.arange(50) % 2 == 1).astype("boolean"))
  assert ds.x.dtype == np.float64 and ds.y.dtype == np.int64
  values = pd.Series(rng.normal(size=100)).astype("Float64")
  labels, edges = data.discretize_equal_frequency(values, 4)
  np.testing.assert_array_equal(labels, data.discretize_equal_frequency(
      values.to_numpy(np.float64), 4)[0])
  # Labels: bool, whole floats and nullable integers split like ints; NaN / pd.NA are refused.
  y = np.arange(100) % 2
  expected = data.split_semisupervised(0, y, 10).labeled
  for same in (y == 1, y.astype(float), pd.Series(y).astype("Int64")):
    np.testing.assert_array_equal(data.split_semisupervised(0, same, 10).labeled, expected)
  with pytest.raises(ValueError, match="y contain 1 NaN .*drop or label those rows"):
    data.split_semisupervised(0, pd.Series(y).astype("Int64").where(np.arange(100) < 99, pd.NA), 10)


def test_discretize_with_edges_refuses_nan():
  _, edges = data.discretize_equal_frequency(np.arange(100.0), 4)
  np.testing.assert_array_equal(data.discretize_with_edges([-np.inf, np.inf], edges), [0, 3])
  with pytest.raises(ValueError, match=r"1 NaN or missing values \(first at row 1\); they "
                     r"belong to no class"):
    data.discretize_with_edges([0.0, np.nan], edges)
  with pytest.raises(ValueError, match="edges must be a nondecreasing vector .* no NaN"):
    data.discretize_with_edges([0.0], [0.0, np.nan, 1.0, 2.0])


def test_stratified_split_is_proportional():
  y = _imbalanced_labels()
  split = data.split_semisupervised(0, y, num_labeled=100, stratify=True)
  np.testing.assert_array_equal(np.bincount(y[split.labeled]), [40, 30, 20, 9, 1])


def test_split_errors():
  y = _imbalanced_labels()
  with pytest.raises(ValueError, match="smaller than the number of classes"):
    data.split_semisupervised(0, y, num_labeled=4)
  with pytest.raises(ValueError, match="must be at most the number of points"):
    data.split_semisupervised(0, y, num_labeled=500, num_test=600)
  with pytest.raises(ValueError, match=r"classes \[5\] do not occur"):
    data.split_semisupervised(0, y, num_labeled=10, num_classes=6)
  with pytest.raises(ValueError, match="Discretize a regression target first"):
    data.split_semisupervised(0, y.astype(float) + 0.5, num_labeled=10)
  with pytest.raises(ValueError, match="Use stratify=True"):
    data.split_semisupervised(0, y, num_labeled=5, max_tries=3)
  # Class 2 has a single point (index 6); pick a seed whose one test point is that point.
  y_small = np.array([0, 0, 0, 1, 1, 1, 2])
  seed = next(s for s in range(1000) if np.random.default_rng(s).permutation(7)[0] == 6)
  with pytest.raises(ValueError, match=r"classes \[2\] have no point left to label"):
    data.split_semisupervised(np.random.default_rng(seed), y_small, num_labeled=3, num_test=1)


# --- embedded datasets -------------------------------------------------------------------------


@pytest.mark.parametrize("name, shape, counts", [
    ("era", (1000, 4), [92, 142, 181, 172, 158, 118, 88, 31, 18]),
    ("esl", (488, 4), [2, 12, 38, 100, 116, 135, 62, 19, 4]),
    ("lev", (1000, 4), [93, 280, 403, 197, 27]),
    ("swd", (1000, 10), [32, 352, 399, 217]),
])
def test_skordinal_sets_load_with_labels_0_to_k_minus_1(name, shape, counts):
  ds = data.load(name.upper())  # Names are case-insensitive.
  assert ds.name == name and ds.task == "ordinal" and ds.x.shape == shape
  assert ds.x.dtype == np.float64 and ds.num_classes == len(counts)
  np.testing.assert_array_equal(np.bincount(ds.y), counts)


def test_breast_cancer_positive_is_malignant():
  ds = data.load("breast_cancer")
  bunch = sk_datasets.load_breast_cancer()
  np.testing.assert_array_equal(ds.x, bunch.data)
  np.testing.assert_array_equal(ds.y, bunch.target_names[bunch.target] == "malignant")
  assert ds.task == "binary" and ds.y.sum() == 212


# --- synthetic data ----------------------------------------------------------------------------


def _ordinal_auc(scores, labels, k):
  """Reference ordinal AUC (QS3ORAO Eq. 2): mean of sklearn AUCs of the k-1 splits."""
  return np.mean([sk_metrics.roc_auc_score(labels > j, scores) for j in range(k - 1)])


def test_synthetic_ordinal_is_pure_and_has_known_ground_truth():
  ds = data.make_synthetic_ordinal(3, num_points=4000, num_test=2000, num_features=5)
  again = data.make_synthetic_ordinal(jax.random.key(3), num_points=4000, num_test=2000,
                                      num_features=5)
  np.testing.assert_array_equal(ds.x, again.x)
  np.testing.assert_array_equal(ds.y_test, again.y_test)
  assert not np.array_equal(ds.x, data.make_synthetic_ordinal(4, 4000, 2000, 5).x)
  np.testing.assert_allclose(ds.bayes_score, data.bayes_score(ds.x))
  np.testing.assert_allclose(ds.bayes_score_test, data.bayes_score(ds.x_test))
  # y counts the thresholds below the latent value, so it is 5 nearly equal classes.
  assert np.all(np.abs(np.bincount(ds.y, minlength=5) / 4000 - 0.2) < 0.05)
  # f* ranks better than a noisy version of itself and than any single feature.
  auc_star = _ordinal_auc(ds.bayes_score_test, ds.y_test, 5)
  noisy = ds.bayes_score_test + np.random.default_rng(0).normal(size=2000)
  assert auc_star > _ordinal_auc(noisy, ds.y_test, 5) + 0.02
  for j in range(5):
    assert auc_star > _ordinal_auc(ds.x_test[:, j], ds.y_test, 5) + 0.02
  # Larger f* means larger classes on average (ordered thresholds).
  means = [ds.bayes_score[ds.y == j].mean() for j in range(5)]
  assert np.all(np.diff(means) > 0)


def test_synthetic_ordinal_sample_auc_near_monte_carlo_population_auc():
  big = data.make_synthetic_ordinal(10, num_points=100_000, num_test=0, num_features=3)
  small = data.make_synthetic_ordinal(11, num_points=5000, num_test=0, num_features=3)
  population = _ordinal_auc(big.bayes_score, big.y, 5)
  sample = _ordinal_auc(small.bayes_score, small.y, 5)
  # noise = 1 makes a realistic problem (SGEMM's best AUCs are about 0.88).
  assert 0.85 < population < 0.95 and abs(sample - population) < 0.01
  # The qsg_jax metric agrees with the sklearn reference.
  np.testing.assert_allclose(float(metrics.ordinal_auc(small.bayes_score, small.y, 5)), sample,
                             atol=1e-5)


def test_synthetic_binary_positive_fraction_and_auc():
  ds = data.load("synthetic_binary")
  assert ds.task == "binary" and ds.x.shape == (20_000, 8) and ds.x_test.shape == (10_000, 8)
  assert 0.25 < ds.y.mean() < 0.35 and 0.25 < ds.y_test.mean() < 0.35
  auc = sk_metrics.roc_auc_score(ds.y_test, ds.bayes_score_test)
  assert auc > sk_metrics.roc_auc_score(ds.y_test, ds.x_test[:, 0]) + 0.02


def test_synthetic_errors():
  with pytest.raises(ValueError, match="num_features must be >= 3"):
    data.make_synthetic_ordinal(0, num_points=10, num_features=2)
  with pytest.raises(ValueError, match="thresholds must be 2 increasing values"):
    data.make_synthetic_ordinal(0, num_points=10, num_classes=3, thresholds=[1.0, 0.0])
  with pytest.raises(ValueError, match="positive_fraction must lie in"):
    data.make_synthetic_binary(0, positive_fraction=1.5)
  with pytest.raises(ValueError, match="noise must be > 0"):
    data.make_synthetic_ordinal(0, num_points=10, noise=0.0)


def test_data_checks():
  """Bad inputs (RELIABILITY.md): non-finite statistics and points, counts that are not counts."""
  with pytest.raises(ValueError, match="lo and scale must be finite"):
    data.minmax_apply(toy.X_L, np.array([np.nan, 0.0, 0.0]), np.ones(3))
  with pytest.raises(ValueError, match=r"minmax_apply x contains 1 NaN .*first at row 2"):
    data.minmax_apply(toy.with_value(toy.X_L, (2, 2), np.nan), np.zeros(3), np.ones(3))
  with pytest.raises(TypeError, match="num_labeled must be a whole number >= 1; received 2.5"):
    data.split_semisupervised(0, toy.Y_L, num_labeled=2.5)
  with pytest.raises(ValueError, match="num_test must be a whole number >= 0; received -1"):
    data.split_semisupervised(0, toy.Y_L, num_labeled=6, num_test=-1)
  with pytest.raises(ValueError, match="num_points must be a whole number >= 1; received 0"):
    data.make_synthetic_ordinal(num_points=0, num_test=10)
  with pytest.raises(ValueError, match="num_test must be a whole number >= 0; received -1"):
    data.make_synthetic_binary(num_points=10, num_test=-1)


def test_split_semisupervised_refuses_labels_outside_0_to_k_minus_1():
  """A -1 'unlabeled' marker was taken as a class (and such rows drawn as labeled); labels >= k
  with num_classes=k were accepted silently."""
  with pytest.raises(ValueError, match=r"class labels 0..k-1 .*y\[2\] = -1 \(10 such rows\)"):
    data.split_semisupervised(0, np.array([0, 1, -1] * 10), num_labeled=5)
  with pytest.raises(ValueError, match=r"\(k = 3\); y\[3\] = 3 \(20 such rows\)"):
    data.split_semisupervised(0, np.array([0, 1, 2, 3, 4] * 10), num_labeled=5, num_classes=3)
  split = data.split_semisupervised(0, np.array([0, 1, 2] * 10), num_labeled=5)
  assert len(split.labeled) == 5


def test_a_column_squashed_by_a_few_extreme_rows_is_named():
  """One row of 1e4 in a [0, 1] column: after min-max scaling 98% of the rows lie in 1e-4 of the
  range and an easy set ranked near chance without a word. Binary columns and a repeated code
  with rare other values (a central spread of 0), and the real data sets, pass silently."""
  rng = np.random.default_rng(0)
  x = np.c_[rng.uniform(size=1600), rng.uniform(size=1600) > 0.99,
            np.where(rng.uniform(size=1600) < 0.97, 999.0, rng.uniform(0, 30, 1600))]
  lo, scale = data.minmax_fit(x)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    preprocessing.warn_if_squashed(x, lo, scale)
  x[1234, 0] = 1e4
  lo, scale = data.minmax_fit(x)
  with pytest.warns(UserWarning, match=r"X's column\(s\) 0: 98% of the rows lie in a sliver .* "
                    r"row 1234 holds 1e\+04"):
    preprocessing.warn_if_squashed(x, lo, scale)
  y = np.where(np.arange(1600) < 200, (x[:, 0] > 0.5).astype(int), -1)
  fixed = dict(lam=1e-3, length_scale=1.0, labeled_weight=0.5, random_state=0)
  with pytest.warns(UserWarning, match=r"column\(s\) 0: 98% of the rows"):
    qsg_jax.QSGS2AUC(scale_inputs=True, **fixed).fit(x, y)
  with warnings.catch_warnings():   # "auto" (the default) ranks it instead, and column 2 (its
    warnings.simplefilter("error")  # middle half is one code: spread 0, over 10 values)
    assert qsg_jax.QSGS2AUC(**fixed).fit(x, y).input_ranks_.columns.tolist() == [0, 2]
  rows = x[1100:1300]                                      # row 1234 among them
  clean = np.delete(rows, 134, axis=0)
  for model in (qsg_jax.roc_svm.ROCSVM(kernel="linear", random_state=0),
                qsg_jax.online_pairwise.OnlinePairwiseRanker()):   # the same rule and words
    with pytest.warns(UserWarning, match=r"column\(s\) 0: 98% of the rows .* model barely") as got:
      model.fit(rows, (rows[:, 0] > 0.5).astype(int))
    assert {w.filename for w in got if "sliver" in str(w.message)} == {__file__}   # the caller
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter("always")
      model.fit(clean, (clean[:, 0] > 0.5).astype(int))
    assert not [w for w in caught if "sliver" in str(w.message)]
