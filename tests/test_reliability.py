"""Bad inputs at the public boundary: every message of the reliability checks, and no NaN AUC.

Each test names the class of bad input it covers (RELIABILITY.md lists them). Inputs are tiny and
most errors are raised before anything is compiled, so the file runs in seconds.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

import qsg_jax
from qsg_jax import _validation as validation
from qsg_jax import baselines
from qsg_jax import data
from qsg_jax import metrics
from qsg_jax import model_selection
from qsg_jax import online_pairwise as op
from qsg_jax import thresholds

RNG = np.random.default_rng(0)
X_L = RNG.uniform(size=(24, 3)).astype(np.float32)
Y_L = np.arange(24) % 3                    # 3 ordinal classes, 8 points each
Y_B = np.arange(24) % 2                    # binary, 0 = negative, 1 = positive
X_U = RNG.uniform(size=(30, 3)).astype(np.float32)
SCORES = RNG.normal(size=24).astype(np.float32)
TINY = dict(num_steps=8, num_frequencies=4, unlabeled_batch_size=8, chunk_size=8, block_group=4)


def _fit(**changes):
  args = dict(x_labeled=X_L, y_labeled=Y_L, x_unlabeled=X_U, key=0, **TINY)
  args.update(changes)
  return qsg_jax.fit(args.pop("x_labeled"), args.pop("y_labeled"), args.pop("x_unlabeled"),
                     **args)


def _with(values, index, value):
  out = np.array(values, np.float64)
  out[index] = value
  return out


# ---- metrics: non-finite scores, labels off the convention -------------------------------------

@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("metric", [
    lambda s: metrics.binary_auc(s, Y_B),
    lambda s: metrics.masked_auc(s, Y_B > 0, Y_B == 0),
    lambda s: metrics.ordinal_auc(s, Y_L, 3),
    lambda s: metrics.split_aucs(s, Y_L, 3),
    lambda s: metrics.mean_absolute_error(s, Y_L),
    lambda s: baselines.mean_split_auc(s, Y_L, 3),
    lambda s: baselines.split_aucs(s, Y_L, 3),
    lambda s: thresholds.fit_thresholds(s, Y_L, 3),
])
def test_metrics_refuse_non_finite_scores(metric, bad):
  with pytest.raises(ValueError, match=r"contain 1 NaN or infinite values \(first at row 3"):
    metric(_with(SCORES, 3, bad))


def test_split_aucs_refuses_non_finite_column_scores():
  scores = np.stack([SCORES, SCORES], axis=1)
  scores[5, 1] = np.nan
  with pytest.raises(ValueError, match=r"first at index \(5, 1\)"):
    baselines.mean_split_auc(scores, Y_L, 3)


def test_metrics_refuse_non_numeric_scores():
  with pytest.raises(TypeError, match="scores must be real numbers; received dtype <U1"):
    metrics.binary_auc(np.array(["a"] * 24), Y_B)
  with pytest.raises(TypeError, match="scipy sparse matrix"):
    metrics.ordinal_auc(sp.csr_matrix(SCORES[None]), Y_L, 3)


@pytest.mark.parametrize("labels, k, pattern", [
    (Y_L + 1, 3, r"got 1..k \(1..3 with k=3\) -- subtract 1"),
    (Y_L - 1, 3, r"must lie in 0..2 \(num_classes=3\); received values -1..1"),
    (Y_L * 2, 3, r"must lie in 0..2 \(num_classes=3\); received values 0..4"),
    (Y_L + 0.5, 3, "must be integers 0..k-1; received 0.5 at row 0"),
    (_with(Y_L, 4, np.nan), 3, r"contain 1 NaN or infinite values \(first at row 4\)"),
])
def test_ordinal_metrics_refuse_labels_off_convention(labels, k, pattern):
  for metric in (metrics.ordinal_auc, metrics.split_aucs, baselines.mean_split_auc,
                 thresholds.fit_thresholds):
    with pytest.raises(ValueError, match=pattern):
      metric(SCORES, labels, k)


@pytest.mark.parametrize("k, error, pattern", [
    (1, ValueError, "num_classes must be a whole number >= 2; received 1"),
    (0, ValueError, "num_classes must be a whole number >= 2; received 0"),
    (2.5, TypeError, "num_classes must be a whole number >= 2; received 2.5"),
])
def test_ordinal_metrics_check_num_classes(k, error, pattern):
  with pytest.raises(error, match=pattern):
    metrics.ordinal_auc(SCORES, Y_L, k)
  with pytest.raises(error, match=pattern):
    thresholds.fit_thresholds(SCORES, Y_L, k)


@pytest.mark.parametrize("labels, error, pattern", [
    (Y_L, ValueError, r"binary labels must be 0/1 \(or -1/\+1, or bool; positive = 1\); "
                      r"received values \[0, 1, 2\]"),
    (_with(Y_B, 2, np.nan), ValueError, r"contain 1 NaN or infinite values \(first at row 2\)"),
    (np.array(["y", "n"] * 12), TypeError, "must be binary numbers"),
])
def test_binary_auc_refuses_non_binary_labels(labels, error, pattern):
  with pytest.raises(error, match=pattern):
    metrics.binary_auc(SCORES, labels)


def test_binary_auc_accepts_every_binary_convention():
  expected = float(metrics.binary_auc(SCORES, Y_B))
  assert float(metrics.binary_auc(SCORES, 2 * Y_B - 1)) == expected
  assert float(metrics.binary_auc(SCORES, Y_B.astype(bool))) == expected


def test_metrics_under_jit_return_nan_never_a_number_above_one():
  all_nan = jnp.full(24, jnp.nan)
  assert np.isnan(jax.jit(metrics.binary_auc)(all_nan, Y_B))       # was 1.5 before the fix
  one_nan = jnp.asarray(_with(SCORES, 3, np.nan), jnp.float32)
  per_split = jax.jit(metrics.split_aucs, static_argnums=2)(one_nan, Y_L, 3)
  assert np.isnan(per_split).all()
  shifted = jax.jit(metrics.ordinal_auc, static_argnums=2)(SCORES, Y_L + 1, 3)
  assert np.isnan(shifted)                                         # label 3 outside 0..2
  b = jax.jit(thresholds.fit_thresholds, static_argnums=2)(one_nan, Y_L, 3)
  assert np.isnan(b).all()
  classes = jax.jit(thresholds.predict_classes)(one_nan, jnp.array([0.0, 1.0]))
  assert classes[3] == -1 and (np.delete(np.asarray(classes), 3) >= 0).all()


def test_predict_classes_refuses_nan_and_keeps_infinite_scores():
  with pytest.raises(ValueError, match=r"scores contain 1 NaN .*first at row 3"):
    thresholds.predict_classes(_with(SCORES, 3, np.nan), jnp.array([0.0, 1.0]))
  with pytest.raises(ValueError, match=r"thresholds contain 1 NaN"):
    thresholds.predict_classes(SCORES, np.array([np.nan, 1.0]))
  with pytest.raises(ValueError, match=r"scores must have shape \[n\] and thresholds \[k-1\]"):
    thresholds.predict_classes(SCORES[:, None], jnp.array([0.0, 1.0]))
  classes = thresholds.predict_classes(np.array([-np.inf, np.inf]), jnp.array([0.0, 1.0]))
  assert classes.tolist() == [0, 2]


def test_fit_thresholds_checks_surrogate_and_margin():
  with pytest.raises(ValueError, match="unknown surrogate 'hinge2'"):
    thresholds.fit_thresholds(SCORES, Y_L, 3, "hinge2")
  with pytest.raises(ValueError, match="margin must be finite and >= 0; received -1.0"):
    thresholds.fit_thresholds(SCORES, Y_L, 3, margin=-1.0)


# ---- qsg_jax.fit: counts, keys, step sizes, data -----------------------------------------------

@pytest.mark.parametrize("name", ["num_steps", "num_frequencies", "labeled_batch_size",
                                  "unlabeled_batch_size", "chunk_size", "block_group",
                                  "num_segments", "num_shards"])
@pytest.mark.parametrize("value, error, pattern", [
    (0, ValueError, "must be a whole number >= 1; received 0"),
    (-3, ValueError, "must be a whole number >= 1; received -3"),
    (2.5, TypeError, "must be a whole number >= 1"),
    (True, TypeError, "must be a whole number >= 1"),
])
def test_fit_checks_every_count(name, value, error, pattern):
  with pytest.raises(error, match=f"{name} {pattern}"):
    _fit(**{name: value})


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(key=None), TypeError, r"key must be an int seed or a jax.random.key; received None. "
                                r"Pass e.g. key=0"),
    (dict(step_size="fast"), TypeError, "step_size must be a number"),
    (dict(step_size=[1.0, 2.0]), TypeError, "step_size must be a number"),
    (dict(step_size=True), TypeError, "step_size must be a number"),
    (dict(step_size=0.0), ValueError, "step_size must be finite and > 0; received 0.0"),
    (dict(step_size=float("nan")), ValueError, "step_size must be finite and > 0; received nan"),
    (dict(sigma="wide"), TypeError, "sigma must be a number; received 'wide'"),
    (dict(progress="yes"), TypeError, "progress must be a callable or None; received str"),
    (dict(cache_unlabeled="no"), TypeError, "cache_unlabeled must be True or False"),
    (dict(threshold_surrogate="foo"), ValueError, "unknown surrogate 'foo'"),
    (dict(mesh="cpu"), TypeError, "mesh must be a jax.sharding.Mesh or None; received str"),
    (dict(num_classes=1), ValueError, "num_classes must be a whole number >= 2; received 1"),
])
def test_fit_checks_arguments_before_training(changes, error, pattern):
  with pytest.raises(error, match=pattern):
    _fit(**changes)


@pytest.mark.parametrize("name", ["x_labeled", "x_unlabeled"])
def test_fit_refuses_sparse_input_with_the_fix(name):
  dense = X_L if name == "x_labeled" else X_U
  with pytest.raises(TypeError, match=rf"{name} is a scipy sparse matrix of shape .*"
                                      rf"Pass {name}.toarray\(\)"):
    _fit(**{name: sp.csr_matrix(dense)})


@pytest.mark.parametrize("name, row, col", [("x_labeled", 7, 2), ("x_unlabeled", 11, 0)])
def test_fit_reports_nan_at_the_users_row(name, row, col):
  dense = X_L if name == "x_labeled" else X_U
  with pytest.raises(ValueError, match=rf"{name} contains 1 NaN .*\(first at row {row}\), "
                                       rf"e.g. column {col} = nan"):
    _fit(**{name: _with(dense, (row, col), np.nan)})


def test_fit_refuses_float64_that_overflows_float32():
  x = _with(X_L, (5, 1), 1e300)
  with pytest.raises(ValueError, match=r"x_labeled has 1 values beyond the float32 range .*row 5, "
                                       r"column 1: 1e\+300.*minmax_fit"):
    _fit(x_labeled=x)


@pytest.mark.parametrize("labels, error, pattern", [
    (Y_L + 1, ValueError, r"labels must be 0..k-1; got 1..3 \(no class 0\) -- subtract 1"),
    (2 * Y_B - 1, ValueError, r"binary labels are 0 = negative, 1 = positive: map -1/\+1"),
    (np.where(Y_L == 2, -1, Y_L), ValueError, "-1 marks unlabeled points only in the scikit-learn"),
    (np.where(Y_L == 2, -7, Y_L), ValueError, "received -7 at row 2 .*map classes to 0..k-1"),
    (_with(Y_L, 2, np.nan), ValueError, r"labels contain 1 NaN or infinite values \(first at row "
                                        r"2\)"),
    (np.array(list("abc") * 8), TypeError, "labels must be integers 0..k-1; received dtype <U1"),
    (Y_L + 0.5, ValueError, "labels must be integers 0..k-1; received 0.5 at row 0"),
    (sp.csr_matrix(Y_L), TypeError, "labels is a scipy sparse matrix"),
])
def test_fit_label_messages(labels, error, pattern):
  with pytest.raises(error, match=pattern):
    _fit(y_labeled=labels)


def test_huge_label_values_give_short_messages():
  labels = np.where(Y_L == 2, 10**12, Y_L)
  with pytest.raises(ValueError, match=r"labels go up to 1e\+12") as info:
    _fit(y_labeled=labels)
  assert len(str(info.value)) < 400
  pattern = r"must lie in 0..2 \(num_classes=3\); received 1e\+12"
  with pytest.raises(ValueError, match=pattern) as info:
    _fit(y_labeled=labels, num_classes=3)
  assert len(str(info.value)) < 400
  many = np.arange(24) % 2
  with pytest.raises(ValueError, match=r"class\(es\) \[2, 3, .*more\)") as info:
    validation.check_labels(many, 24, num_classes=500)
  assert len(str(info.value)) < 400


def test_fit_warns_about_unscaled_features_with_the_fix():
  # divergence_threshold=0 stops fit right after the warning, before anything is compiled.
  pattern = r"x_labeled has values up to \|x\| = 2.99e\+03 .*minmax_fit"
  with pytest.warns(UserWarning, match=pattern):
    with pytest.raises(ValueError, match="divergence_threshold"):
      _fit(x_labeled=X_L * 3000, sigma=1e-6, divergence_threshold=0)


def test_fit_surfaces_the_prime_num_steps_warning_at_the_callers_line():
  with pytest.warns(UserWarning, match="num_steps=37 has no divisor near chunk_size=32") as record:
    with pytest.raises(ValueError, match="divergence_threshold"):
      _fit(num_steps=37, chunk_size=32, divergence_threshold=0)
  assert any(w.filename == __file__ for w in record)


def test_decision_function_checks_points():
  result = _fit()
  with pytest.raises(ValueError, match=r"x contains 1 NaN .*\(first at row 4\)"):
    qsg_jax.decision_function(result, _with(X_U, (4, 0), np.nan))
  with pytest.raises(TypeError, match=r"x is a scipy sparse matrix"):
    qsg_jax.predict(result, sp.csr_matrix(X_U))
  with pytest.raises(ValueError, match="beyond the float32 range"):
    qsg_jax.decision_function(result, np.full((2, 3), 1e300))
  assert np.isfinite(qsg_jax.decision_function(result, X_U)).all()


# ---- baselines ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fit_fn", [baselines.fit_samult, baselines.fit_pnu_auc])
def test_binary_baselines_use_the_same_label_convention(fit_fn):
  with pytest.raises(ValueError, match=r"got 1..2 \(no class 0\) -- subtract 1"):
    fit_fn(X_L, Y_B + 1, X_U, lam=1.0, sigma=1.0, gamma=0.5)
  with pytest.raises(ValueError, match=r"map -1/\+1 with \(y > 0\).astype\(int\)"):
    fit_fn(X_L, 2 * Y_B - 1, X_U, lam=1.0, sigma=1.0, gamma=0.5)
  with pytest.raises(ValueError, match=r"must lie in 0..1 \(num_classes=2\)"):
    fit_fn(X_L, Y_L, X_U, lam=1.0, sigma=1.0, gamma=0.5)


def test_baselines_refuse_sparse_and_overflow():
  with pytest.raises(TypeError, match="x_labeled is a scipy sparse matrix"):
    baselines.fit_m_samult(sp.csr_matrix(X_L), Y_L, X_U, lam=1.0, sigma=1.0, gamma=0.5)
  with pytest.raises(ValueError, match="x_unlabeled has 1 values beyond the float32 range"):
    baselines.fit_exact_qsg(X_L, Y_L, _with(X_U, (0, 0), -1e200), lam=1.0, sigma=1.0, gamma=0.5)
  with pytest.raises(ValueError, match=r"labels contain 1 NaN .*\(first at row 1\)"):
    baselines.fit_svorex(X_L, _with(Y_L, 1, np.nan))


# ---- online pairwise ---------------------------------------------------------------------------

def test_fit_stream_chunk_checks():
  y = RNG.normal(size=24)
  with pytest.raises(TypeError, match="chunk 0: x is a scipy sparse matrix.*toarray"):
    op.fit_stream([(sp.csr_matrix(X_L), y)], mu=10.0)
  with pytest.raises(ValueError, match=r"chunk 1: x has values up to .*row 2.* exceed the float32"):
    op.fit_stream([(X_L, y), (_with(X_L, (2, 0), 1e300), y)], mu=10.0)
  with pytest.raises(ValueError, match=r"chunk 0 has 1 examples with NaN .*\(first at row 5\)"):
    op.fit_stream([(_with(X_L, (5, 1), np.nan), y)], mu=10.0)
  with pytest.raises(TypeError, match="chunk_size must be a whole number >= 1 or None; received"):
    op.fit_stream([(X_L, y)], mu=10.0, chunk_size=2.5)
  with pytest.raises(ValueError, match="num_chunks must be a whole number >= 0; received -1"):
    op.fit_stream([(X_L, y)], mu=10.0, num_chunks=-1)
  with pytest.raises(ValueError, match="the stream was empty"):
    op.fit_stream([(X_L[:0], y[:0])], mu=10.0)
  with pytest.raises(ValueError, match=r"estimate_mu: the sample has 1 rows with NaN .*row 3"):
    op.estimate_mu(_with(X_L, (3, 0), np.inf))


# ---- data and model selection ------------------------------------------------------------------

def test_data_checks():
  with pytest.raises(ValueError, match="lo and scale must be finite"):
    data.minmax_apply(X_L, np.array([np.nan, 0.0, 0.0]), np.ones(3))
  with pytest.raises(ValueError, match=r"minmax_apply x contains 1 NaN .*first at row 2"):
    data.minmax_apply(_with(X_L, (2, 2), np.nan), np.zeros(3), np.ones(3))
  with pytest.raises(TypeError, match="num_labeled must be a whole number >= 1; received 2.5"):
    data.split_semisupervised(0, Y_L, num_labeled=2.5)
  with pytest.raises(ValueError, match="num_test must be a whole number >= 0; received -1"):
    data.split_semisupervised(0, Y_L, num_labeled=6, num_test=-1)
  with pytest.raises(ValueError, match="num_points must be a whole number >= 1; received 0"):
    data.make_synthetic_ordinal(num_points=0, num_test=10)
  with pytest.raises(ValueError, match="num_test must be a whole number >= 0; received -1"):
    data.make_synthetic_binary(num_points=10, num_test=-1)


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(num_folds=1), ValueError, "num_folds must be a whole number >= 2; received 1"),
    (dict(tasks_per_batch=0), ValueError, "tasks_per_batch must be a whole number >= 1; received"),
    (dict(seed=None), TypeError, "seed must be a whole number >= 0; received None"),
    (dict(key=None), TypeError, "key must be an int seed"),
    (dict(num_steps=0), ValueError, "num_steps must be a whole number >= 1; received 0"),
    (dict(progress=3), TypeError, "progress must be a callable"),
])
def test_cross_validate_checks_arguments_first(changes, error, pattern):
  with pytest.raises(error, match=pattern):
    model_selection.cross_validate(X_L, Y_L, X_U, quick=True, **changes)


def test_roc_svm_refuses_labels_it_would_otherwise_binarize():
  from qsg_jax import roc_svm  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  x = rng.random((30, 2)).astype(np.float32)
  with pytest.raises(ValueError, match=r"binary y must be 0/1 .*received values \[0, 1, 2\]\. "
                                       r"Binarize explicitly"):
    roc_svm.fit(x, np.arange(30) % 3)
  with pytest.raises(TypeError, match=r"y must be binary numbers .*use qsg_jax.roc_svm.ROCSVM"):
    roc_svm.fit(x, np.array(["a", "b"] * 15))
