"""Metrics against scikit-learn and hand-computed values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import metrics as skm

from qsg_jax import baselines
from qsg_jax import estimators
from qsg_jax import metrics
from qsg_jax import thresholds
from tests import _bad_inputs as toy
from tests.conftest import raises_short


@pytest.mark.parametrize("n,ties", [(9, False), (500, True), (50_000, True)])
def test_binary_auc_matches_sklearn(n, ties):
  rng = np.random.default_rng(n)
  y = np.resize([0, 1, 1], n)
  rng.shuffle(y)
  s = rng.normal(size=n) + 0.7 * y
  if ties:
    s = np.round(s, 1)
  got = float(metrics.binary_auc(jnp.asarray(s, jnp.float32), jnp.asarray(y)))
  np.testing.assert_allclose(got, skm.roc_auc_score(y, s.astype(np.float32)), atol=2e-6)


def test_exact_auc_of_rows_matches_sklearn_per_row():
  """The host AUC of a stack of score rows (the direct CV scores every lam at once): each row
  scikit-learn's AUC, ties included; a row with NaN and an empty group give NaN."""
  rng = np.random.default_rng(3)
  labels = np.resize([0, 1, 2], 40)            # 2 counts in neither group
  scores = np.round(rng.normal(size=(2, 3, 40)) + 0.5 * labels, 1)
  got = metrics.exact_auc(scores, labels == 1, labels == 0)
  assert got.shape == (2, 3)
  keep = labels < 2
  want = [[skm.roc_auc_score(labels[keep], row[keep]) for row in block] for block in scores]
  np.testing.assert_allclose(got, want, rtol=1e-12)
  assert metrics.exact_auc(scores[0, 0], labels == 1, labels == 0) == got[0, 0]
  scores[1, 2, 3] = np.nan
  assert np.isnan(metrics.exact_auc(scores, labels == 1, labels == 0)[1, 2])
  assert np.isnan(metrics.exact_auc(scores, labels == 1, labels == 5)).all()


def test_binary_auc_hand_example_and_all_ties():
  scores = jnp.array([0.1, 0.4, 0.35, 0.8])
  assert float(metrics.binary_auc(scores, jnp.array([0, 0, 1, 1]))) == 0.75
  assert float(metrics.binary_auc(jnp.ones(6), jnp.array([0, 1, 0, 1, 1, 0]))) == 0.5


def test_binary_auc_single_class_is_nan():
  assert np.isnan(float(metrics.binary_auc(jnp.arange(4.0), jnp.zeros(4, jnp.int32))))


def test_ordinal_auc_is_mean_of_split_aucs():
  rng = np.random.default_rng(1)
  y = rng.integers(0, 5, 1000)
  s = rng.normal(size=1000) + 0.5 * y
  per_split = metrics.split_aucs(jnp.asarray(s, jnp.float32), jnp.asarray(y), 5)
  expected = [skm.roc_auc_score(y > j, s.astype(np.float32)) for j in range(4)]
  np.testing.assert_allclose(np.asarray(per_split), expected, atol=2e-6)
  np.testing.assert_allclose(
      float(metrics.ordinal_auc(jnp.asarray(s, jnp.float32), jnp.asarray(y), 5)),
      np.mean(expected), atol=2e-6)


def test_auc_jit_matches_no_jit():
  rng = np.random.default_rng(2)   # 200 points: test_jitted_aucs_keep_their_traced_path's program
  y = jnp.asarray(rng.integers(0, 2, 200))
  s = jnp.asarray(rng.normal(size=200), jnp.float32)
  assert float(jax.jit(metrics.binary_auc)(s, y)) == pytest.approx(float(metrics.binary_auc(s, y)))


def test_mae_and_shape_errors():
  assert float(metrics.mean_absolute_error(jnp.array([0, 2, 4]), jnp.array([1, 2, 2]))) == 1.0
  with pytest.raises(ValueError, match=r"scores must be a vector of shape \[n\]"):
    metrics.binary_auc(jnp.zeros((3, 2)), jnp.zeros(3))
  with pytest.raises(ValueError, match="same length"):
    metrics.mean_absolute_error(jnp.zeros(3), jnp.zeros(4))


def test_split_aucs_of_shared_and_per_split_scores_with_a_mask_match_sklearn():
  rng = np.random.default_rng(3)
  y = rng.integers(0, 4, 200)
  shared, per_split = rng.normal(size=200), rng.normal(size=(200, 3))
  mask = rng.random(200) < 0.6
  for scores in (shared, per_split):
    column = lambda j: scores if scores.ndim == 1 else scores[:, j]
    expected = [skm.roc_auc_score(y[mask] > j, column(j)[mask]) for j in range(3)]
    np.testing.assert_allclose(metrics.split_aucs(scores, y, 4, mask), expected, atol=1e-12)
    jitted = jax.jit(metrics.split_aucs, static_argnums=2)(scores.astype(np.float32), y, 4, mask)
    np.testing.assert_allclose(jitted, expected, atol=1e-5)
  with pytest.raises(ValueError, match=r"scores must have shape \[n\] or \[n, k-1\] = \[200, 3\]"):
    metrics.split_aucs(per_split[:, :2], y, 4)


def test_binary_auc_under_jit_gives_nan_for_a_label_that_is_not_binary():
  scores = jnp.array([0.1, 0.4, 0.35, 0.8])
  for bad in (np.nan, 2.0, 0.5):
    labels = jnp.array([0.0, bad, 1.0, 1.0])
    assert np.isnan(float(jax.jit(metrics.binary_auc)(scores, labels))), bad
  assert float(jax.jit(metrics.binary_auc)(scores, jnp.array([-1, -1, 1, 1]))) == 0.75


# ---- Bad inputs (RELIABILITY.md): non-finite scores, labels off the convention -----------------

@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("metric", [
    lambda s: metrics.binary_auc(s, toy.Y_B),
    lambda s: metrics.masked_auc(s, toy.Y_B > 0, toy.Y_B == 0),
    lambda s: metrics.ordinal_auc(s, toy.Y_L, 3),
    lambda s: metrics.split_aucs(s, toy.Y_L, 3),
    lambda s: metrics.mean_absolute_error(s, toy.Y_L),
    lambda s: baselines.mean_split_auc(s, toy.Y_L, 3),
    lambda s: baselines.split_aucs(s, toy.Y_L, 3),
    lambda s: thresholds.fit_thresholds(s, toy.Y_L, 3),
])
def test_metrics_refuse_non_finite_scores(metric, bad):
  with pytest.raises(ValueError, match=r"contain 1 NaN or infinite values \(first at row 3"):
    metric(toy.with_value(toy.SCORES, 3, bad))


def test_metrics_refuse_non_numeric_scores():
  with pytest.raises(TypeError, match="scores must be real numbers; received dtype <U1"):
    metrics.binary_auc(np.array(["a"] * 24), toy.Y_B)
  with pytest.raises(TypeError, match="scipy sparse matrix"):
    metrics.ordinal_auc(sp.csr_matrix(toy.SCORES[None]), toy.Y_L, 3)


@pytest.mark.parametrize("labels, k, pattern", [
    (toy.Y_L + 1, 3, r"got 1..k \(1..3 with k=3\) -- subtract 1"),
    (toy.Y_L - 1, 3, r"must lie in 0..2 \(num_classes=3\); received values -1..1"),
    (toy.Y_L * 2, 3, r"must lie in 0..2 \(num_classes=3\); received values 0..4"),
    (toy.Y_L + 0.5, 3, "must be integers 0..k-1; received 0.5 at row 0"),
    (toy.with_value(toy.Y_L, 4, np.nan), 3, r"contain 1 NaN or infinite values \(first at row 4\)"),
])
def test_ordinal_metrics_refuse_labels_off_convention(labels, k, pattern):
  for metric in (metrics.ordinal_auc, metrics.split_aucs, baselines.mean_split_auc,
                 thresholds.fit_thresholds):
    with pytest.raises(ValueError, match=pattern):
      metric(toy.SCORES, labels, k)


@pytest.mark.parametrize("k, error, pattern", [
    (1, ValueError, "num_classes must be a whole number >= 2; received 1"),
    (0, ValueError, "num_classes must be a whole number >= 2; received 0"),
    (2.5, TypeError, "num_classes must be a whole number >= 2; received 2.5"),
])
def test_ordinal_metrics_check_num_classes(k, error, pattern):
  with pytest.raises(error, match=pattern):
    metrics.ordinal_auc(toy.SCORES, toy.Y_L, k)
  with pytest.raises(error, match=pattern):
    thresholds.fit_thresholds(toy.SCORES, toy.Y_L, k)


@pytest.mark.parametrize("labels, error, pattern", [
    (toy.Y_L, ValueError, r"binary labels must be 0/1 \(or -1/\+1, or bool; positive = 1\); "
                          r"received values \[0, 1, 2\]"),
    (toy.with_value(toy.Y_B, 2, np.nan), ValueError,
     r"contain 1 NaN or infinite values \(first at row 2\)"),
    (np.array(["y", "n"] * 12), TypeError, "must be binary numbers"),
])
def test_binary_auc_refuses_non_binary_labels(labels, error, pattern):
  with pytest.raises(error, match=pattern):
    metrics.binary_auc(toy.SCORES, labels)


def test_binary_auc_accepts_every_binary_convention():
  expected = float(metrics.binary_auc(toy.SCORES, toy.Y_B))
  assert float(metrics.binary_auc(toy.SCORES, 2 * toy.Y_B - 1)) == expected
  assert float(metrics.binary_auc(toy.SCORES, toy.Y_B.astype(bool))) == expected


def test_metrics_under_jit_return_nan_never_a_number_above_one():
  all_nan = jnp.full(24, jnp.nan)
  assert np.isnan(jax.jit(metrics.binary_auc)(all_nan, toy.Y_B))     # was 1.5 before the fix
  one_nan = jnp.asarray(toy.with_value(toy.SCORES, 3, np.nan), jnp.float32)
  per_split = jax.jit(metrics.split_aucs, static_argnums=2)(one_nan, toy.Y_L, 3)
  assert np.isnan(per_split).all()
  shifted = jax.jit(metrics.ordinal_auc, static_argnums=2)(toy.SCORES, toy.Y_L + 1, 3)
  assert np.isnan(shifted)                                         # label 3 outside 0..2
  b = jax.jit(thresholds.fit_thresholds, static_argnums=2)(one_nan, toy.Y_L, 3)
  assert np.isnan(b).all()
  classes = jax.jit(thresholds.predict_classes)(one_nan, jnp.array([0.0, 1.0]))
  assert classes[3] == -1 and (np.delete(np.asarray(classes), 3) >= 0).all()


# ---- Bad inputs (RELIABILITY.md, second audit): exact AUCs of float64 scores, masks, classes ----

def _saturated_probabilities(n=200, seed=0):
  """float64 probabilities within 1e-13 of 1: float32 rounds every one of them to 1.0."""
  rng = np.random.default_rng(seed)
  y = rng.integers(0, 2, n)
  return 1 - np.exp(-30 - 3 * y - rng.normal(size=n)), y


def test_binary_auc_ranks_float64_scores_that_float32_merges():
  p, y = _saturated_probabilities()
  assert np.unique(p.astype(np.float32)).size == 1   # the collapse this test is about
  expected = skm.roc_auc_score(y, p)
  assert expected > 0.9
  assert float(metrics.binary_auc(p, y)) == pytest.approx(expected, abs=1e-7)
  assert float(metrics.masked_auc(p, y == 1, y == 0)) == pytest.approx(expected, abs=1e-7)
  assert float(metrics.ordinal_auc(p, y, 2)) == pytest.approx(expected, abs=1e-7)


def test_binary_auc_near_ties_huge_values_and_true_ties_match_sklearn():
  # Closed form: positives 1+1e-12, 1+3e-12, 2 against negatives 1, 1+2e-12, 0.5: 8 of 9 pairs.
  near = [1, 1 + 1e-12, 1 + 2e-12, 1 + 3e-12, .5, 2.]
  labels = [0, 1, 0, 1, 0, 1]
  assert float(metrics.binary_auc(near, labels)) == pytest.approx(8 / 9, abs=1e-7)
  huge = np.array([1e300, 1e300 * (1 + 1e-10), 1e39, 5.0, -1e300, 2.0])
  assert float(metrics.binary_auc(huge, labels)) == pytest.approx(
      skm.roc_auc_score(labels, huge), abs=1e-7)
  tied = np.array([1 + 1e-12, 1 + 1e-12, 0.5, 0.5, 3.0, 3.0])   # every pair across a tie: 1/2
  assert float(metrics.binary_auc(tied, [0, 1, 1, 0, 0, 1])) == pytest.approx(0.5)
  assert float(metrics.binary_auc(tied, [0, 1, 1, 0, 0, 1])) == skm.roc_auc_score(
      [0, 1, 1, 0, 0, 1], tied)


def test_ordinal_aucs_and_scorer_are_exact_for_float64_scores():
  rng = np.random.default_rng(1)
  y = rng.integers(0, 3, 150)
  s = 1e20 + 1e5 * (y + rng.normal(size=150))   # float32 spacing at 1e20 is ~8.8e12: all tie
  s[:3] = [1e300, -1e300, 1e39]
  expected = [skm.roc_auc_score(y > j, s) for j in range(2)]
  np.testing.assert_allclose(np.asarray(metrics.split_aucs(s, y, 3)), expected,
                             atol=1e-7)
  assert float(metrics.ordinal_auc(s, y, 3)) == pytest.approx(np.mean(expected), abs=1e-7)

  class Fitted:   # a fitted ordinal model whose scores are float64
    classes_ = np.array([0, 1, 2])

    def decision_function(self, x):
      return s[np.asarray(x)[:, 0]]

  rows = np.arange(150)[:, None]
  assert estimators.ordinal_auc_scorer(Fitted(), rows, y) == pytest.approx(np.mean(expected),
                                                                            abs=1e-7)


def test_jitted_aucs_keep_their_traced_path():
  p, y = _saturated_probabilities(seed=2)
  s = np.asarray(-np.log1p(-p), np.float32)   # increasing in p, distinct in float32
  expected = skm.roc_auc_score(y, p)
  assert float(jax.jit(metrics.binary_auc)(s, y)) == pytest.approx(expected, abs=1e-6)
  auc = jax.jit(metrics.ordinal_auc, static_argnums=2)(s, y, 2)
  assert float(auc) == pytest.approx(float(metrics.ordinal_auc(s, y, 2)), abs=1e-6)
  vmapped = jax.vmap(lambda f: metrics.masked_auc(f, y > 0, y == 0))(jnp.stack([s, -s]))
  np.testing.assert_allclose(np.asarray(vmapped), [expected, 1 - expected], atol=1e-6)


def test_masked_auc_refuses_overlapping_and_non_boolean_masks():
  s = np.array([0.1, 0.4, 0.35, 0.8, 0.2, 0.9])
  y = np.array([0, 0, 1, 1, 2, 2])
  raises_short(ValueError, r"positive and negative overlap at 2 points \(first at row 2\)",
               metrics.masked_auc, s, y >= 1, y <= 1)
  raises_short(TypeError, "positive must be a bool mask.*received dtype float64",
               metrics.masked_auc, s, (y > 0).astype(float), (y == 0).astype(float))
  raises_short(ValueError, "positive must be a bool mask .or 0/1.; received 2 at row 4",
               metrics.masked_auc, s, y, y == 0)
  assert float(metrics.masked_auc(s, (y > 0).astype(int), (y == 0).astype(int))) == 0.75


def test_shape_messages_name_labels_and_bool_labels_work():
  s = np.array([0.1, 0.4, 0.35, 0.8, 0.2, 0.9])
  y = np.array([0, 0, 1, 1, 0, 1])
  raises_short(ValueError, r"labels must be a vector of shape \[n\]; received shape \(6, 1\)",
               metrics.binary_auc, s, y[:, None])
  raises_short(ValueError, "scores and labels must have the same length; received 6 and 5",
               metrics.ordinal_auc, s, y[:5], 2)
  raises_short(ValueError, "scores and labels must have the same length; received 6 and 5",
               metrics.split_aucs, s, y[:5], 2)
  expected = skm.roc_auc_score(y, s)
  assert float(metrics.ordinal_auc(s, y.astype(bool), 2)) == pytest.approx(expected)
  assert float(jax.jit(metrics.ordinal_auc, static_argnums=2)(
      s.astype(np.float32), jnp.asarray(y, bool), 2)) == pytest.approx(expected)


def test_mae_refuses_scores_and_the_no_class_marker():
  labels = np.array([0, 1, 2, 1])
  raises_short(ValueError, "predicted must be classes 0..k-1 .*not scores; received 0.37 at row 0",
               metrics.mean_absolute_error, np.array([0.37, 1.2, 2.0, 1.0]), labels)
  raises_short(ValueError,
               "predicted must be classes 0..k-1; received -1 at row 2 .predict_classes",
               metrics.mean_absolute_error, np.array([0, 1, -1, 1]), labels)
  raises_short(ValueError, r"predicted must be classes 0..2 \(num_classes=3\); received 3 at row 1",
               metrics.mean_absolute_error, np.array([0, 3, 2, 1]), labels, 3)
  assert float(metrics.mean_absolute_error(np.array([0., 2., 2., 0.]), labels, 3)) == 0.5
  assert np.isnan(float(jax.jit(metrics.mean_absolute_error)(jnp.array([0, 1, -1, 1]),
                                                             jnp.asarray(labels))))


def test_mae_refuses_non_finite_classes_in_the_words_of_classes():
  """Its NaN messages said "an AUC of such scores has no meaning", labels included."""
  labels = np.array([0, 1, 2, 1])
  message = raises_short(ValueError, r"predicted contain 1 NaN or infinite values \(first at row "
                         r"2\); a predicted class is a whole number 0..k-1",
                         metrics.mean_absolute_error, np.array([0, 1, np.nan, 1]), labels)
  assert "AUC" not in message
  message = raises_short(ValueError, r"labels contain 1 NaN or infinite values \(first at row 0\);"
                         r" every point needs a class 0..k-1", metrics.mean_absolute_error,
                         labels, np.array([np.inf, 1, 2, 1]))
  assert "AUC" not in message
  raises_short(TypeError, "predicted must be real numbers; received dtype <U1",
               metrics.mean_absolute_error, np.array(["a", "b", "c", "d"]), labels)


def test_num_classes_follows_the_librarys_whole_number_rule():
  """A whole float (3.0) is the count 3 in every num_classes (as every count of the library:
  _validation.check_count); a fraction, a bool or text is refused (the check test above)."""
  for fn in (metrics.ordinal_auc, metrics.split_aucs, thresholds.fit_thresholds):
    np.testing.assert_array_equal(fn(toy.SCORES, toy.Y_L, 3.0), fn(toy.SCORES, toy.Y_L, 3))
  for bad in (True, "3"):
    with pytest.raises(TypeError, match="num_classes must be a whole number >= 2"):
      metrics.ordinal_auc(toy.SCORES, toy.Y_L, bad)


def test_jitted_binary_auc_refuses_mixed_conventions_and_ranks_integers_exactly():
  """Under jit: labels 0 and -1 together are no binary convention (NaN, as the host refuses
  them; the -1 row was counted as a negative); integer scores past 2^24 keep their order (they
  were ranked in float32), the largest integer included."""
  jitted = jax.jit(metrics.binary_auc)
  assert np.isnan(jitted(jnp.array([0.1, 0.5, 0.9]), jnp.array([0, 1, -1])))
  big = np.iinfo(np.int32).max
  rng = np.random.default_rng(0)
  for scores, labels in [
      # (5 points, the shape of the case of the largest integer below: one compilation)
      (np.array([2**24, 2**24 + 1, 2**24 + 1, 2**24, 2**24 + 1], np.int32),
       np.array([0, 1, 1, 0, 1])),
      ((2**25 + rng.integers(0, 1000, 1000)).astype(np.int32), rng.integers(0, 2, 1000)),
      (np.array([big, 5, big, 1, big], np.int32), np.array([1, 0, 0, 1, 1])),
      (np.array([True, False, True]), np.array([1, 0, 0]))]:
    assert float(jitted(jnp.asarray(scores), jnp.asarray(labels))) == pytest.approx(
        skm.roc_auc_score(labels, scores), abs=1e-6)
