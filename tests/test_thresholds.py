"""Ordinal thresholds: Lemma 1 as a property, brute force references, exact float64, jit."""

import hypothesis
from hypothesis import strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import scipy

from qsg_jax import thresholds as th
from tests import _bad_inputs as toy
from tests.conftest import raises_short


def _objective(b, scores, labels, j, surrogate, margin):
  """Threshold j's part of L_AT at b, written directly in float64."""
  above = labels > j
  z = np.where(above, scores - b, b - scores)
  h = np.maximum(0.0, margin - z)
  return float(np.sum(h if surrogate == "hinge" else h * h))


def _brute_minimum(scores, labels, j, surrogate, margin):
  """min over b of threshold j's objective: at a breakpoint (hinge) or a root on an interval."""
  above = labels > j
  z = np.unique(np.where(above, scores - margin, scores + margin))
  candidates = [z, [z[0] - 1.0, z[-1] + 1.0], 0.5 * (z[1:] + z[:-1])]
  if surrogate == "squared_hinge":   # stationary point of each piece: mean of the active z
    for b in np.concatenate(candidates[:1] + candidates[2:]):
      active = np.where(above, scores - margin < b, scores + margin > b)
      if active.any():
        candidates.append([np.mean(np.where(above, scores - margin, scores + margin)[active])])
  return min(_objective(b, scores, labels, j, surrogate, margin)
             for b in np.concatenate([np.ravel(c) for c in candidates]))


@st.composite
def _problems(draw):
  k = draw(st.integers(2, 5))
  n = draw(st.integers(k, 40))
  labels = np.array(draw(st.permutations(list(range(k)) + draw(
      st.lists(st.integers(0, k - 1), min_size=n - k, max_size=n - k)))))
  # Few distinct values make ties (within and across classes) common.
  values = draw(st.lists(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.25, 1.0, 3.0]) | st.floats(
      -10, 10, allow_nan=False, width=32), min_size=n, max_size=n))
  return np.asarray(values, np.float64), labels, k


@hypothesis.settings(max_examples=150, deadline=None, derandomize=True)
@hypothesis.given(problem=_problems(), surrogate=st.sampled_from(["hinge", "squared_hinge"]),
                  margin=st.sampled_from([0.0, 0.5]))
def test_lemma_1_thresholds_are_optimal_and_ordered(problem, surrogate, margin):
  """Ordinal paper, Lemma 1: the optimum is ordered; each b_j attains the brute-force minimum."""
  scores, labels, k = problem
  b = th.fit_thresholds(scores, labels, k, surrogate, margin)
  assert isinstance(b, np.ndarray) and b.dtype == np.float64 and b.shape == (k - 1,)
  assert np.all(np.isfinite(b))
  assert np.all(np.diff(b) >= 0)                                    # ordered
  for j in range(k - 1):
    best = _brute_minimum(scores, labels, j, surrogate, margin)
    assert _objective(b[j], scores, labels, j, surrogate, margin) <= best + 1e-9 * (1 + best)
  # Strictly ordered when the classes' scores do not overlap (then b_j separates j from j+1).
  separated = np.sort(scores)[np.argsort(np.argsort(labels, kind="stable"))]
  b_sep = th.fit_thresholds(separated + labels * 1e-3, labels, k, surrogate, margin)
  if margin == 0.0 and len(np.unique(separated + labels * 1e-3)) == separated.size:
    assert np.all(np.diff(b_sep) > 0)
  # Unique for the squared hinge with a margin wherever a point is inside the margin (the
  # objective is then strictly convex there): moving b_j either way costs strictly more.
  if surrogate == "squared_hinge" and margin > 0:
    for j in range(k - 1):
      at = _objective(b[j], scores, labels, j, surrogate, margin)
      for step in (1e-3, -1e-3):
        assert at == 0 or _objective(b[j] + step, scores, labels, j, surrogate, margin) > at


def test_float64_scores_are_solved_exactly_and_predicted_exactly():
  """float32 used to merge these scores: every point then landed in class 0."""
  scores = 1e8 + np.arange(300) * 0.25                    # distinct in float64 only
  labels = np.repeat([0, 1, 2], 100)
  b = th.fit_thresholds(scores, labels, 3)
  assert b.dtype == np.float64
  np.testing.assert_array_equal(b, [1e8 + 24.875, 1e8 + 49.875])   # midway between classes
  np.testing.assert_array_equal(np.asarray(th.predict_classes(scores, b)), labels)
  # Beyond float32 (1e39, 1e300) and integers: exact, never NaN.
  for factor in (1e39, 1e300):
    np.testing.assert_array_equal(th.fit_thresholds(scores * factor, labels, 3), b * factor)
  ints = (np.arange(300) * 4 + 2**40).astype(np.int64)   # beyond float32's 24-bit mantissa
  np.testing.assert_array_equal(th.fit_thresholds(ints, labels, 3),
                                [2**40 + 398.0, 2**40 + 798.0])
  # A margin that takes the thresholds beyond float64 is an error, not inf.
  with pytest.raises(ValueError, match="beyond float64; use a margin on the scale"):
    th.fit_thresholds(scores * 1e300, labels, 3, margin=1.7e308)


@pytest.mark.parametrize("surrogate", ["hinge", "squared_hinge"])
def test_host_solver_and_jit_agree_on_float32(surrogate):
  rng = np.random.default_rng(0)
  scores = rng.normal(size=500).astype(np.float32)
  labels = np.clip(np.round(scores + rng.normal(size=500) * 0.5 + 1.5), 0, 3).astype(np.int32)
  host = th.fit_thresholds(scores, labels, 4, surrogate, 0.1)
  assert isinstance(host, jax.Array) and host.dtype == jnp.float32   # float32 in, float32 out
  traced = jax.jit(th.fit_thresholds, static_argnums=(2, 3))(jnp.asarray(scores),
                                                             jnp.asarray(labels), 4, surrogate,
                                                             0.1)
  np.testing.assert_allclose(host, traced, rtol=1e-6, atol=1e-6)
  with jax.enable_x64(True):   # x64: the jitted solver runs in float64 too
    wide = jax.jit(th.fit_thresholds, static_argnums=(2, 3))(jnp.asarray(scores, jnp.float64),
                                                             jnp.asarray(labels), 4, surrogate,
                                                             0.1)
    assert wide.dtype == jnp.float64
  np.testing.assert_allclose(wide, th.fit_thresholds(scores.astype(np.float64), labels, 4,
                                                     surrogate, 0.1), rtol=1e-12)
  # Under jit a NaN score gives NaN thresholds (values cannot be checked there), never numbers.
  # (the compiled solver of ``traced`` above: same shapes, surrogate and margin)
  bad = jnp.asarray(scores).at[3].set(jnp.nan)
  assert np.all(np.isnan(jax.jit(th.fit_thresholds, static_argnums=(2, 3))(
      bad, jnp.asarray(labels), 4, surrogate, 0.1)))


@pytest.mark.parametrize("kind", ["int", "bool", "float16", "Float64", "Int64"])
def test_every_score_dtype_and_pandas_input(kind):
  rng = np.random.default_rng(1)
  values = np.round(rng.normal(size=200) * 3)
  labels = (values + rng.normal(size=200) > 0).astype(int)
  cast = {"int": lambda a: a.astype(np.int64), "bool": lambda a: a > 0,
          "float16": lambda a: a.astype(np.float16),
          "Float64": lambda a: pd.Series(a).astype("Float64"),
          "Int64": lambda a: pd.Series(a).astype("Int64")}[kind]
  reference = np.asarray(cast(values), np.float64)
  b = th.fit_thresholds(cast(values), pd.Series(labels).astype("Int64"), 2)
  best = _brute_minimum(reference, labels, 0, "hinge", 0.0)
  assert _objective(float(np.asarray(b)[0]), reference, labels, 0, "hinge", 0.0) <= best
  np.testing.assert_array_equal(np.asarray(th.predict_classes(cast(values), b)),
                                (reference > float(np.asarray(b)[0])).astype(int))


def test_missing_values_and_missing_classes_are_errors():
  scores = pd.Series([0.1, 0.5, pd.NA, 0.9]).astype("Float64")
  with pytest.raises(ValueError, match="scores contain 1 NaN or infinite values \\(first at row 2"):
    th.fit_thresholds(scores, np.array([0, 1, 1, 2]), 3)
  with pytest.raises(ValueError, match="labels contain 1 NaN"):
    th.fit_thresholds(np.arange(4.0), pd.Series([0, 1, pd.NA, 2]).astype("Int64"), 3)
  with pytest.raises(ValueError, match="class\\(es\\) \\[2\\] have no point"):
    th.fit_thresholds(np.arange(4.0), np.array([0, 1, 1, 0]), 3)
  with pytest.raises(ValueError, match="scores contain 1 NaN"):
    th.predict_classes(scores, np.array([0.3, 0.6]))
  with pytest.raises(ValueError, match="margin must be finite"):
    th.fit_thresholds(np.arange(4.0), np.array([0, 1, 1, 2]), 3, margin=np.inf)


# ---- Bad inputs (RELIABILITY.md) ----------------------------------------------------------------

def test_predict_classes_refuses_nan_and_keeps_infinite_scores():
  with pytest.raises(ValueError, match=r"scores contain 1 NaN .*first at row 3"):
    th.predict_classes(toy.with_value(toy.SCORES, 3, np.nan), jnp.array([0.0, 1.0]))
  with pytest.raises(ValueError, match=r"thresholds contain 1 NaN"):
    th.predict_classes(toy.SCORES, np.array([np.nan, 1.0]))
  with pytest.raises(ValueError, match=r"scores must have shape \[n\] and thresholds \[k-1\]"):
    th.predict_classes(toy.SCORES[:, None], jnp.array([0.0, 1.0]))
  classes = th.predict_classes(np.array([-np.inf, np.inf]), jnp.array([0.0, 1.0]))
  assert classes.tolist() == [0, 2]


def test_nan_scores_are_refused_in_the_words_of_classes_and_thresholds_not_of_an_auc():
  """predict_classes and fit_thresholds said "an AUC of such scores has no meaning"."""
  for fn, args, words in (
      (th.predict_classes, (np.array([0.1, np.nan]), np.array([0.0])),
       r"scores contain 1 NaN values \(first at row 1\); a NaN score has no class"),
      (th.predict_classes, (np.array([0.1, 2.0]), np.array([np.nan])),
       r"thresholds contain 1 NaN values .*fit_thresholds gives NaN thresholds"),
      (th.fit_thresholds, (toy.with_value(toy.SCORES, 3, np.inf), toy.Y_L, 3),
       r"scores contain 1 NaN or infinite values \(first at row 3\); thresholds fitted to them "
       r"have no meaning")):
    assert "AUC" not in raises_short(ValueError, words, fn, *args)


def test_fit_thresholds_checks_surrogate_and_margin():
  with pytest.raises(ValueError, match="unknown surrogate 'hinge2'"):
    th.fit_thresholds(toy.SCORES, toy.Y_L, 3, "hinge2")
  with pytest.raises(ValueError, match="margin must be finite and >= 0; received -1.0"):
    th.fit_thresholds(toy.SCORES, toy.Y_L, 3, margin=-1.0)


_SIX_SCORES = np.array([0.1, 0.5, 0.9, 0.2, 0.3, 0.8], np.float32)


@pytest.mark.parametrize("labels, num_classes, pattern", [
    (np.array([0, 0, 2, 0, 2, 2]), 3, r"class\(es\) \[1\] have no point \(counts per class: "
                                      r"\[3, 0, 3\]\)"),
    (np.zeros(6, int), 3, r"class\(es\) \[1, 2\] have no point"),
    (np.ones(6, int), 2, r"class\(es\) \[0\] have no point"),
])
def test_fit_thresholds_refuses_a_missing_class(labels, num_classes, pattern):
  raises_short(ValueError, r"fit_thresholds needs every class 0\.\.\d among the labels.*" + pattern,
               th.fit_thresholds, _SIX_SCORES, labels, num_classes)


@pytest.mark.parametrize("scores, labels", [
    (_SIX_SCORES, np.array([0, 1, 0, 1, 1])),
    (np.stack([_SIX_SCORES, _SIX_SCORES], axis=1), np.array([0, 1, 0, 1, 1, 0])),
    (_SIX_SCORES[:, None], np.array([0, 1, 0, 1, 1, 0])),
])
def test_fit_thresholds_refuses_mismatched_shapes(scores, labels):
  raises_short(ValueError, r"scores and labels must both have shape \[n\].*received \(",
               th.fit_thresholds, scores, labels, 2)


def test_fit_thresholds_with_every_class_is_unchanged_and_jittable():
  labels = np.array([0, 1, 2, 0, 1, 2])
  np.testing.assert_allclose(th.fit_thresholds(_SIX_SCORES, labels, 3), [0.25, 0.65])
  jitted = jax.jit(th.fit_thresholds, static_argnums=2)(_SIX_SCORES, labels, 3)
  np.testing.assert_allclose(jitted, [0.25, 0.65])


@pytest.mark.parametrize("bad", [np.array(["0.5"]), ["low", "high"], np.array([None, 0.5])])
def test_predict_classes_refuses_thresholds_that_are_not_numbers(bad):
  raises_short(TypeError, r"thresholds must be real numbers; received dtype",
               th.predict_classes, _SIX_SCORES, bad)
  raises_short(TypeError, r"scores must be real numbers; received dtype",
               th.predict_classes, bad, np.array([0.5]))


def test_squared_hinge_returns_the_midpoint_of_a_zero_loss_interval_with_and_without_jit():
  """Where no point is active the loss is 0 on [max negative breakpoint, min positive one]: its
  midpoint is the answer (an end was returned, and rounding decided which: jit and host gave
  0.7 and 1.6 for one input)."""
  jitted = jax.jit(th.fit_thresholds, static_argnums=(2, 3))
  for scores, labels, margin, expected in [
      # (3 points, as in the next case: one compiled solver for both)
      (np.array([0.0, 0.0, 3.0]), np.array([0, 0, 1]), 0.0, 1.5),
      (np.array([0.0, 0.2, 3.0]), np.array([0, 0, 1]), 0.5, 0.5 * (0.2 + 0.5 + 3.0 - 0.5)),
      (np.array([0.0, 1.0, 2.0, 6.0, 7.0]), np.array([0, 0, 1, 2, 2]), 0.5, None)]:
    host = np.asarray(th.fit_thresholds(scores, labels, int(labels.max()) + 1, "squared_hinge",
                                        margin))
    traced = np.asarray(jitted(scores.astype(np.float32), labels, int(labels.max()) + 1,
                               "squared_hinge", margin))
    np.testing.assert_allclose(traced, host, rtol=1e-6, atol=1e-6)
    if expected is not None:
      np.testing.assert_allclose(host, [expected], rtol=1e-12)
    loss = lambda b: float(th.all_threshold_loss(jnp.asarray(b), jnp.asarray(scores),
                                                 jnp.asarray(labels), "squared_hinge", margin))
    assert loss(host) == pytest.approx(0.0, abs=1e-12)   # a minimizer (here the loss is 0)


# ---- fit_probabilities / class_probabilities ----------------------------------------------------


def _smoothed_objective(params, scores, labels, num_classes):
  """fit_probabilities' objective written directly: the cross-entropy over the k-1 splits of
  sigmoid(a f - c_j) against Platt's smoothed targets, in jax.numpy (for jax.grad)."""
  a, cut = params[0], params[1:]
  above = labels[:, None] > jnp.arange(num_classes - 1)[None, :]
  n_above = above.sum(axis=0)
  targets = jnp.where(above, (n_above + 1.0) / (n_above + 2.0), 1.0 / (labels.size - n_above + 2.0))
  z = a * scores[:, None] - cut[None, :]
  return jnp.sum(jax.nn.softplus(z) - targets * z)


@pytest.mark.parametrize("num_classes", [2, 3, 5])
def test_fit_probabilities_is_a_stationary_point_of_its_objective(num_classes):
  """Interior solutions (slope > 0, cutpoints strictly ordered) have zero gradient (jax.grad of
  the objective written directly, in float64), and no nearby point is lower."""
  rng = np.random.default_rng(num_classes)
  scores = rng.normal(size=400) * 3.0 + 1.0
  labels = np.digitize(scores + rng.logistic(size=400) * 2.0,
                       np.quantile(scores, np.linspace(0, 1, num_classes + 1)[1:-1]))
  slope, cutpoints = th.fit_probabilities(scores, labels, num_classes)
  assert slope > 0 and np.all(np.diff(cutpoints) > 0)
  params = np.concatenate([[slope], cutpoints])
  with jax.enable_x64(True):
    objective = lambda p: _smoothed_objective(p, jnp.asarray(scores), jnp.asarray(labels),
                                              num_classes)
    grad = np.asarray(jax.grad(objective)(jnp.asarray(params)))
    best = float(objective(jnp.asarray(params)))
    for step in rng.normal(size=(20, params.size)) * 1e-3:
      assert float(objective(jnp.asarray(params + step))) >= best - 1e-9
  np.testing.assert_allclose(grad / scores.size, 0.0, atol=1e-5)


def test_two_classes_is_platts_sigmoid():
  """k = 2: the 2-parameter Platt fit (scipy's BFGS on the objective written directly), and the
  probabilities are sigmoid(a f - c) in column 1."""
  rng = np.random.default_rng(0)
  scores = rng.normal(size=300)
  labels = (rng.random(300) < 1 / (1 + np.exp(-2 * scores + 0.5))).astype(int)
  slope, cutpoints = th.fit_probabilities(scores, labels, 2)
  n_pos = labels.sum()
  target = np.where(labels == 1, (n_pos + 1) / (n_pos + 2), 1 / (300 - n_pos + 2))
  platt = scipy.optimize.minimize(
      lambda p: np.sum(np.logaddexp(0, p[0] * scores - p[1]) - target * (p[0] * scores - p[1])),
      [1.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
  np.testing.assert_allclose([slope, cutpoints[0]], platt, rtol=1e-4, atol=1e-5)
  proba = th.class_probabilities(scores, slope, cutpoints)
  np.testing.assert_allclose(proba[:, 1], scipy.special.expit(slope * scores - cutpoints[0]))
  np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_fit_probabilities_recovers_a_cumulative_logistic_model():
  """Labels drawn from P(y > j) = sigmoid(2 f - c_j): the fit is within sampling error, and its
  mean probabilities match the class frequencies."""
  rng = np.random.default_rng(1)
  scores = rng.normal(size=20000)
  true_cut = np.array([-1.0, 0.5, 2.0])
  above = rng.random((20000, 1)) < scipy.special.expit(2.0 * scores[:, None] - true_cut[None, :])
  labels = np.sum(np.cumprod(above, axis=1), axis=1)   # y > j for the first j's only
  slope, cutpoints = th.fit_probabilities(scores, labels, 4)
  assert slope == pytest.approx(2.0, rel=0.05)
  np.testing.assert_allclose(cutpoints, true_cut, atol=0.1)
  proba = th.class_probabilities(scores, slope, cutpoints)
  np.testing.assert_allclose(proba.mean(axis=0), np.bincount(labels) / labels.size, atol=0.01)


def test_class_probabilities_are_ordered_and_degenerate_scores_give_the_frequencies():
  """Separable scores get a finite slope (Platt's smoothing); equal scores a slope 0 and the
  smoothed class frequencies; probabilities are >= 0, sum to 1, and P(top class) rises with f."""
  scores = np.arange(12.0)
  slope, cutpoints = th.fit_probabilities(scores, (scores > 5).astype(int), 2)
  assert 0 < slope < np.inf
  flat_slope, flat_cut = th.fit_probabilities(np.zeros(8), np.array([0, 0, 0, 1, 1, 1, 2, 2]), 3)
  assert flat_slope == 0.0
  above = [(5 * 6 / 7 + 3 / 5) / 8, (2 * 3 / 4 + 6 / 8) / 8]   # the splits' mean smoothed targets
  np.testing.assert_allclose(th.class_probabilities(np.zeros(1), flat_slope, flat_cut)[0],
                             [1 - above[0], above[0] - above[1], above[1]], rtol=1e-4)
  proba = th.class_probabilities(np.linspace(-50, 50, 101), 1.0, [-1.0, 0.0, 3.0])
  assert np.all(proba >= 0) and np.allclose(proba.sum(axis=1), 1.0)
  assert np.all(np.diff(proba[:, -1]) >= 0) and np.all(np.diff(proba[:, 0]) <= 0)
  # Both tails kept (1 - sigmoid(100) was exactly 0 above the cutpoints: log 0 = -inf).
  far = th.class_probabilities(np.array([-100.0, 100.0]), 1.0, [0.0, 1.0])
  np.testing.assert_allclose(far[[0, 1], [2, 0]], scipy.special.expit([-101.0, -100.0]),
                             rtol=1e-12)


def test_fit_probabilities_refuses_what_fit_thresholds_refuses():
  with pytest.raises(ValueError, match="have no meaning"):
    th.fit_probabilities(np.array([0.0, np.nan, 1.0]), np.array([0, 1, 1]), 2)
  with pytest.raises(ValueError, match=r"class\(es\) \[1\] have no point"):
    th.fit_probabilities(np.array([0.0, 1.0, 2.0]), np.array([0, 2, 2]), 3)
  with pytest.raises(ValueError, match="must both have shape"):
    th.fit_probabilities(np.zeros((3, 1)), np.array([0, 1, 1]), 2)
