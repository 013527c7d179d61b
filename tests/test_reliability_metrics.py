"""Reliability of the metrics, scorers and online pairwise ranker: exact AUCs, short clear errors.

Each test pins one defect of the 2026 input-validation audit: float64 scores that float32 merged
or overflowed, masks and labels that were misread, and bad arguments that gave raw or no errors.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.metrics import roc_auc_score
from qsg_jax import estimators
from qsg_jax import metrics
from qsg_jax import online_pairwise as op
from qsg_jax.estimators import QS3ORAO
from qsg_jax.online_pairwise.estimator import pairwise_ranking_accuracy
from tests.conftest import raises_short



def _saturated_probabilities(n=200, seed=0):
  """float64 probabilities within 1e-13 of 1: float32 rounds every one of them to 1.0."""
  rng = np.random.default_rng(seed)
  y = rng.integers(0, 2, n)
  return 1 - np.exp(-30 - 3 * y - rng.normal(size=n)), y


# ---- 1. AUCs are exact for float64 scores --------------------------------------------------------

def test_binary_auc_ranks_float64_scores_that_float32_merges():
  p, y = _saturated_probabilities()
  assert np.unique(p.astype(np.float32)).size == 1   # the collapse this test is about
  expected = roc_auc_score(y, p)
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
      roc_auc_score(labels, huge), abs=1e-7)
  tied = np.array([1 + 1e-12, 1 + 1e-12, 0.5, 0.5, 3.0, 3.0])   # every pair across a tie: 1/2
  assert float(metrics.binary_auc(tied, [0, 1, 1, 0, 0, 1])) == pytest.approx(0.5)
  assert float(metrics.binary_auc(tied, [0, 1, 1, 0, 0, 1])) == roc_auc_score([0, 1, 1, 0, 0, 1],
                                                                               tied)


def test_ordinal_aucs_and_scorer_are_exact_for_float64_scores():
  rng = np.random.default_rng(1)
  y = rng.integers(0, 3, 150)
  s = 1e20 + 1e5 * (y + rng.normal(size=150))   # float32 spacing at 1e20 is ~8.8e12: all tie
  s[:3] = [1e300, -1e300, 1e39]
  expected = [roc_auc_score(y > j, s) for j in range(2)]
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
  expected = roc_auc_score(y, p)
  assert float(jax.jit(metrics.binary_auc)(s, y)) == pytest.approx(expected, abs=1e-6)
  auc = jax.jit(metrics.ordinal_auc, static_argnums=2)(s, y, 2)
  assert float(auc) == pytest.approx(float(metrics.ordinal_auc(s, y, 2)), abs=1e-6)
  vmapped = jax.vmap(lambda f: metrics.masked_auc(f, y > 0, y == 0))(jnp.stack([s, -s]))
  np.testing.assert_allclose(np.asarray(vmapped), [expected, 1 - expected], atol=1e-6)


# ---- 2. masked_auc masks -------------------------------------------------------------------------

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


# ---- 3. messages name the user's arguments -------------------------------------------------------

def test_shape_messages_name_labels_and_bool_labels_work():
  s = np.array([0.1, 0.4, 0.35, 0.8, 0.2, 0.9])
  y = np.array([0, 0, 1, 1, 0, 1])
  raises_short(ValueError, r"labels must be a vector of shape \[n\]; received shape \(6, 1\)",
               metrics.binary_auc, s, y[:, None])
  raises_short(ValueError, "scores and labels must have the same length; received 6 and 5",
               metrics.ordinal_auc, s, y[:5], 2)
  raises_short(ValueError, "scores and labels must have the same length; received 6 and 5",
               metrics.split_aucs, s, y[:5], 2)
  expected = roc_auc_score(y, s)
  assert float(metrics.ordinal_auc(s, y.astype(bool), 2)) == pytest.approx(expected)
  assert float(jax.jit(metrics.ordinal_auc, static_argnums=2)(
      s.astype(np.float32), jnp.asarray(y, bool), 2)) == pytest.approx(expected)


# ---- 4. mean_absolute_error takes classes --------------------------------------------------------

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


# ---- 5. scorers ----------------------------------------------------------------------------------

class _Fixed:
  classes_ = np.array([0, 1, 2])

  def decision_function(self, x):
    return np.asarray(x)[:, 0].astype(float)


def test_scorers_check_the_estimator_and_the_length_of_y():
  rows = np.arange(6)[:, None]
  raises_short(ValueError, "y has 5 labels but X has 6 rows", estimators.ordinal_auc_scorer,
               _Fixed(), rows, np.array([0, 1, 2, 0, 1]))
  with pytest.raises(NotFittedError):
    estimators.ordinal_auc_scorer(QS3ORAO(), rows, np.array([0, 1, 2, 0, 1, 2]))
  for scorer in (estimators.ordinal_auc_scorer, estimators.auc_scorer):
    raises_short(TypeError,
                 "scores an estimator with decision_function and classes_.*received object",
                 scorer, object(), rows, np.array([0, 1, 0, 0, 1, 1]))


# ---- 6. online pairwise ranking ------------------------------------------------------------------

def test_pairwise_ranking_accuracy_refuses_non_finite_and_mismatched_input():
  s = np.array([0.1, 0.5, 0.9, 0.3, 0.2, 0.7])
  t = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 2.0])
  raises_short(ValueError, r"scores has 1 NaN or infinite values \(first at row 2\)",
               pairwise_ranking_accuracy, np.where(np.arange(6) == 2, np.nan, s), t)
  raises_short(ValueError, r"targets has 1 NaN or infinite values \(first at row 4\)",
               pairwise_ranking_accuracy, s, np.where(np.arange(6) == 4, np.nan, t))
  raises_short(ValueError, "scores and targets must have the same length; received 6 and 5",
               pairwise_ranking_accuracy, s, t[:5])


@pytest.fixture(scope="module")
def stream():
  rng = np.random.default_rng(3)
  x = rng.normal(size=(40, 3))
  return x, x @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=40)


def test_ranker_score_refuses_nan_targets_and_wrong_lengths(stream):
  x, y = stream
  ranker = op.OnlinePairwiseRanker(mu=50.0, chunk_size=16).fit(x, y)
  raises_short(ValueError, r"y has 1 NaN or infinite values \(first at row 3\)", ranker.score, x,
               np.where(np.arange(40) == 3, np.nan, y))
  raises_short(ValueError, "same length; received 40 and 35", ranker.score, x, y[:35])
  x_nan = x.copy()
  x_nan[7, 1] = np.nan
  for method in (ranker.fit, ranker.partial_fit):
    raises_short(ValueError, r"X has 1 rows with NaN or infinite values \(first at row 7\)", method,
                 x_nan, y)


@pytest.mark.parametrize("schedule, value", [(lambda t: -0.1, "-0.1"), (lambda t: 0.0, "0"),
                                             (lambda t: jnp.where(t > 20, jnp.nan, 0.01), "nan")])
def test_fit_stream_refuses_a_schedule_that_is_not_positive(stream, schedule, value):
  x, y = stream
  t = "21" if value == "nan" else "2"
  raises_short(ValueError, rf"step_size gave gamma_t = {value} at iteration t = {t} \(chunk 0\)",
               op.fit_stream, [(x, y)], step_size=schedule, chunk_size=16)


def test_online_arguments_are_checked(stream):
  x, y = stream
  for name, value in (("theta", "a"), ("theta", None), ("mu", "a")):
    raises_short(TypeError, f"{name} must be a .*received {value!r}", op.polynomial_step_size,
                 **{"theta": 0.75, "mu": 1.0, name: value})
    raises_short(TypeError, f"{name} must be a .*received {value!r}",
                 op.OnlinePairwiseRanker(**{name: value}).fit, x, y)
  raises_short(TypeError, "metrics_fn must be a callable .*received int", op.fit_stream, [(x, y)],
               metrics_fn=3)
