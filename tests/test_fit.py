"""The checked entry point: bad input, divergence, thresholds and an end-to-end sanity run."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import metrics as skm

import qsg_jax
from qsg_jax import engine
from qsg_jax import io
from qsg_jax import thresholds
from qsg_jax.engine import auto_step
from tests import _bad_inputs as toy
from tests import _cv_data



def _ordinal(n=400, k=3, d=3, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.random((n, d)).astype(np.float32)
  latent = np.sin(3 * x[:, 0]) + x[:, 1] ** 2 + 0.1 * rng.normal(size=n)
  y = np.digitize(latent, np.quantile(latent, np.linspace(0, 1, k + 1)[1:-1]))
  return x, y


def _small_fit(**kwargs):
  """qsg_jax.fit on 60 labeled / 340 unlabeled points. One engine setting for the tests here (64
  steps: test_moderate_blow_up_is_reported_not_returned needs them): one training program."""
  x, y = _ordinal()
  args = dict(num_steps=64, num_frequencies=8, unlabeled_batch_size=16, sigma=1.0, lam=1e-3,
              step_size=1.0, chunk_size=16)
  args.update(kwargs)
  return qsg_jax.fit(x[:60], y[:60], x[60:], **args), x, y


def test_fit_ranks_held_out_points_and_predicts_ordered_classes():
  # The stable fit of test_moderate_blow_up_is_reported_not_returned (its program, its shapes):
  # 60 labeled points, 340 held out.
  result, x, y = _small_fit()
  scores = qsg_jax.decision_function(result, x[60:])
  aucs = [skm.roc_auc_score(y[60:] > j, scores) for j in range(2)]
  assert min(aucs) > 0.85, aucs
  b = np.asarray(result.thresholds)
  assert np.all(np.diff(b) >= 0)
  classes = qsg_jax.predict(result, x[60:])
  np.testing.assert_array_equal(classes, (scores[:, None] > b[None, :]).sum(1))
  assert np.mean(np.abs(classes - y[60:])) < 0.5


def test_thresholds_minimize_all_threshold_loss():
  rng = np.random.default_rng(0)
  y = rng.integers(0, 4, 300)
  f = (y + rng.normal(size=300)).astype(np.float32)
  for surrogate in thresholds.SURROGATES:
    b = thresholds.fit_thresholds(jnp.asarray(f), jnp.asarray(y), 4, surrogate)
    assert np.all(np.diff(np.asarray(b)) > 0)  # Lemma 1: ordered
    best = float(thresholds.all_threshold_loss(b, jnp.asarray(f), jnp.asarray(y), surrogate))
    # No perturbation of any single threshold does better (the problem separates per threshold).
    for j in range(3):
      for delta in np.linspace(-1, 1, 41):
        moved = b.at[j].add(delta)
        assert float(thresholds.all_threshold_loss(moved, jnp.asarray(f), jnp.asarray(y),
                                                   surrogate)) >= best - 1e-3


def test_hinge_threshold_flat_minimum_is_the_middle_of_the_gap():
  f = jnp.array([0.0, 1.0, 3.0, 4.0])
  b = thresholds.fit_thresholds(f, jnp.array([0, 0, 1, 1]), 2, "hinge")
  np.testing.assert_allclose(b, [2.0])


def test_divergence_is_detected_and_reported():
  with pytest.raises(qsg_jax.DivergenceError, match=r"diverged at iteration \d+.*Lower the step"):
    _small_fit(step_size=1e4, lam=1e-4)


def test_moderate_blow_up_is_reported_not_returned():
  # eta0 = 3 on this problem: scores climb to about 1e3 (a stable eta0 keeps them under 2), the
  # regime that ended silently at AUC 0.53-0.88 on skin under the former bound of 1e4.
  relaxed, _, _ = _small_fit(step_size=3.0, divergence_threshold=1e30)   # 64 steps
  peak = float(np.max(relaxed.metrics["max_abs_score"]))
  assert qsg_jax.config.DIVERGENCE_THRESHOLD < peak < 1e4
  stable, _, _ = _small_fit(step_size=1.0)
  assert float(np.max(stable.metrics["max_abs_score"])) < 2.0
  with pytest.raises(qsg_jax.DivergenceError, match="Lower the step"):
    _small_fit(step_size=3.0)


@pytest.mark.parametrize("mutate,pattern", [
    (lambda x, y, u: (np.where(np.arange(x.size).reshape(x.shape) == 4, np.nan, x), y, u),
     r"x_labeled contains 1 NaN or infinite values in 1 rows \(first at row 1\)"),
    (lambda x, y, u: (x, y, np.vstack([u, np.full((1, u.shape[1]), np.inf)])),
     "x_unlabeled contains 3 NaN or infinite"),
    (lambda x, y, u: (x, np.where(y == 1, 0, y), u), r"class\(es\) \[1\] have no labeled point"),
    (lambda x, y, u: (x, y, None), "no unlabeled data but gamma"),
    (lambda x, y, u: (x, y, u[:, :2]), "x_unlabeled has 2 features but the model expects 3"),
    (lambda x, y, u: (x, y + 0.5, u), "labels must be integers"),
])
def test_bad_input_errors(mutate, pattern):
  x, y = _ordinal()
  xl, yl, xu = mutate(x[:60], y[:60], x[60:])
  with pytest.raises(ValueError, match=pattern):
    qsg_jax.fit(xl, yl, xu, num_classes=3, num_steps=8)


def test_supervised_fit_without_unlabeled_data():
  x, y = _ordinal()
  result = qsg_jax.fit(x[:60], y[:60], None, gamma=1.0, num_steps=16, num_frequencies=4)
  assert np.all(np.isfinite(np.asarray(result.model.coef)))


def test_gamma_and_hyperparameter_errors():
  x, y = _ordinal()
  with pytest.raises(ValueError, match=r"gamma must lie in \[0, 1\]"):
    qsg_jax.fit(x[:60], y[:60], x[60:], gamma=1.5)
  with pytest.raises(ValueError, match=r"gamma must be a scalar or have shape \[k-1\] = \[2\]"):
    qsg_jax.fit(x[:60], y[:60], x[60:], gamma=[0.5, 0.5, 0.5])
  with pytest.raises(ValueError, match="sigma must be finite and > 0"):
    qsg_jax.fit(x[:60], y[:60], x[60:], sigma=0.0)


def test_features_too_large_for_float32_phases_are_refused():
  x, y = _ordinal()
  with pytest.raises(ValueError,
                     match=r"x_unlabeled has a point of norm 1.73e\+05.*Rescale the features"):
    qsg_jax.fit(x[:60], y[:60], np.vstack([x[60:], np.full((1, 3), 1e5)]), sigma=1.0)
  result, _, _ = _small_fit()
  with pytest.raises(ValueError, match="x has a point of norm .* lower sigma"):
    qsg_jax.decision_function(result, np.full((2, 3), 1e6))


def test_predict_with_wrong_number_of_features():
  result, x, _ = _small_fit()
  with pytest.raises(ValueError, match="x has 4 features but the model expects 3"):
    qsg_jax.decision_function(result, np.ones((5, 4)))


def test_progress_reports_and_chunk_adjustment():
  reports = []
  result, _, _ = _small_fit(num_steps=30, chunk_size=8, progress=reports.append)
  assert result.config.chunk_size == 6 and 30 % result.config.chunk_size == 0
  assert reports[-1]["step"] == 30 and len(reports) >= 2
  assert result.metrics["eta"].shape == (30,)


def test_fit_config_holds_the_hyperparameters_and_keywords_override_it():
  config = qsg_jax.FitConfig(num_steps=64, num_frequencies=8, unlabeled_batch_size=16,
                             sigma=1.0, step_size=1.0)
  x, y = _ordinal()
  by_config = qsg_jax.fit(x[:60], y[:60], x[60:], config=config, chunk_size=16)
  by_keywords, _, _ = _small_fit(lam=config.lam)
  np.testing.assert_array_equal(by_config.model.coef, by_keywords.model.coef)
  assert config.replace(gamma=[0.2, 0.4]).gamma == (0.2, 0.4)
  help_texts = {f.name: f.metadata["help"] for f in dataclasses.fields(qsg_jax.FitConfig)}
  assert set(help_texts) >= {"sigma", "split_lam", "solver"} and all(help_texts.values())
  with pytest.raises(TypeError, match=r"unknown hyper-parameter\(s\) \['sigmaa'\]"):
    qsg_jax.fit(x[:60], y[:60], x[60:], sigmaa=1.0)
  with pytest.raises(TypeError, match="config must be a qsg_jax.FitConfig"):
    qsg_jax.fit(x[:60], y[:60], x[60:], config={"sigma": 1.0})


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(sigma=-1.0), ValueError, "sigma must be finite and > 0"),
    (dict(sigma="0.1"), TypeError, "sigma must be a number; received '0.1'"),
    (dict(gamma=[0.2, 1.5]), ValueError, r"gamma must lie in \[0, 1\]"),
    (dict(step_size="fast"), TypeError, "step_size must be a number .* or 'auto'"),
    (dict(num_steps=2.5), TypeError, "num_steps must be a whole number >= 1; received 2.5"),
    (dict(labeled_batch_size=0), ValueError, "None uses every labeled point"),
    (dict(loss=3), TypeError, r"loss must be one of \('squared', 'hinge', 'logistic'\)"),
    (dict(loss="Hinge"), ValueError, r"unknown loss 'Hinge'; expected one of \('squared'"),
    (dict(split_lam=0.0), ValueError, r"split_lam must be > 0 \(inf allowed\)"),
    (dict(solver="newton"), ValueError, r"solver must be one of \('dsg', 'direct', 'auto'\)"),
])
def test_fit_config_checks_every_field(changes, error, pattern):
  with pytest.raises(error, match=pattern):
    qsg_jax.FitConfig(**changes)


def test_one_switch_picks_the_solver_and_says_which_ran():
  x, y = _ordinal()
  args = dict(key=3, sigma=1.0, lam=1e-3, gamma=0.5)
  by_fit = qsg_jax.fit(x[:60], y[:60], x[60:], solver="direct", **args)
  own = qsg_jax.direct.fit(x[:60], y[:60], x[60:], **args)
  assert by_fit.solver == "direct" and by_fit.metrics["solver"] == "direct"
  assert by_fit.state is None and by_fit.metrics["num_features"] == own.model.coef.shape[0]
  np.testing.assert_array_equal(qsg_jax.decision_function(by_fit, x),
                                qsg_jax.direct.decision_function(own.model, x))
  np.testing.assert_array_equal(by_fit.thresholds, thresholds.fit_thresholds(
      jnp.asarray(own.f_labeled), jnp.asarray(y[:60]), 3, "hinge"))
  assert qsg_jax.fit(x[:60], y[:60], x[60:], solver="auto", **args).solver == "direct"
  assert qsg_jax.FitConfig().solver == "dsg"   # the papers' Algorithm 1 unless asked
  # "auto" runs DSG for another loss, or when a DSG-only setting is given.
  for changes in (dict(loss="hinge"), dict(num_steps=64), dict(chunk_size=16)):
    dsg, _, _ = _small_fit(solver="auto", **changes)
    assert dsg.solver == "dsg" and dsg.state is not None and "solver" not in dsg.metrics
  plain, _, _ = _small_fit()
  assert plain.solver == "dsg"
  landmarks = qsg_jax.fit(x[:60], y[:60], x[60:], solver="direct", num_landmarks=40)
  assert landmarks.model.coef.shape == (40,) and landmarks.metrics["num_features"] == 40


@pytest.mark.parametrize("solver, changes, pattern", [
    ("direct", dict(num_steps=64), r"\['num_steps'\] only mean something to DSG"),
    ("direct", dict(step_size=1.0, labeled_batch_size=8),
     r"\['step_size', 'labeled_batch_size'\] only mean something to DSG"),
    ("direct", dict(num_segments=2), r"\['num_segments'\] only mean something to DSG"),
    ("direct", dict(divergence_threshold=10.0), r"\['divergence_threshold'\] only mean"),
    ("direct", dict(cache_unlabeled=True), r"\['cache_unlabeled'\] only mean something"),
    ("direct", dict(loss="hinge"), "solver='direct' minimizes the squared pairwise loss"),
    ("dsg", dict(num_landmarks=64), r"\['num_landmarks'\] only mean something to the direct"),
    ("auto", dict(num_landmarks=64, num_steps=64), r"'auto' chose DSG: DSG-only settings"),
    ("auto", dict(num_landmarks=64, loss="logistic"), "'auto' chose DSG: the logistic loss"),
])
def test_an_option_of_the_other_solver_is_refused(solver, changes, pattern):
  x, y = _ordinal()
  with pytest.raises(ValueError, match=pattern):
    qsg_jax.fit(x[:60], y[:60], x[60:], solver=solver, **changes)


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(progress=3), TypeError, "progress must be a callable or None"),
    (dict(threshold_surrogate="squared"), ValueError, "surrogate"),
    (dict(key=-1), ValueError, r"key=-1 is out of range"),
    (dict(num_classes=1), ValueError, "num_classes"),
    (dict(mesh="cpu"), TypeError, "mesh must be a jax.sharding.Mesh"),
    (dict(num_landmarks=0), ValueError, "num_landmarks must be a whole number >= 1"),
])
def test_direct_fit_keeps_the_boundary_checks(changes, error, pattern):
  x, y = _ordinal()
  with pytest.raises(error, match=pattern):
    qsg_jax.fit(x[:60], y[:60], x[60:], solver="direct", **changes)


def test_a_direct_fit_scores_wherever_a_dsg_fit_does():
  x, y = _ordinal()
  reports = []
  result = qsg_jax.fit(x[:60], y[:60], x[60:], solver="direct", sigma=1.0,
                       progress=reports.append)
  assert reports == [{"step": 1, "num_steps": 1, "max_abs_score": reports[0]["max_abs_score"]}]
  scores = qsg_jax.decision_function(result, x[60:])
  np.testing.assert_array_equal(qsg_jax.predict(result, x[60:]), (
      scores[:, None] > np.asarray(result.thresholds)[None, :]).sum(1))
  np.testing.assert_array_equal(qsg_jax.split_scores(result, x[60:]),
                                np.repeat(scores[:, None], 2, axis=1))
  assert min(skm.roc_auc_score(y[60:] > j, scores) for j in range(2)) > 0.8
  mesh = jax.make_mesh((1,), ("data",))
  np.testing.assert_allclose(qsg_jax.decision_function(result, x[60:], mesh=mesh), scores,
                             rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match="x has 2 features but the model expects 3"):
    qsg_jax.decision_function(result, x[:, :2])
  corrected = qsg_jax.fit(x[:60], y[:60], x[60:], solver="direct", sigma=1.0, split_lam=0.1)
  own = qsg_jax.direct.fit(x[:60], y[:60], x[60:], sigma=1.0, split_lam=0.1)
  np.testing.assert_array_equal(qsg_jax.split_scores(corrected, x[60:]),
                                qsg_jax.direct.split_scores(own.model, x[60:]))


def test_seeds_above_32_bits_give_their_own_streams():
  a, _, _ = _small_fit(key=0)
  b, _, _ = _small_fit(key=2**32)
  c, _, _ = _small_fit(key=2**32 + 2**33)
  assert not np.array_equal(a.model.coef, b.model.coef)
  assert not np.array_equal(b.model.coef, c.model.coef)
  with pytest.raises(ValueError, match=r"key=-1 is out of range; use a seed in 0..2\*\*63-1"):
    _small_fit(key=-1)


@pytest.mark.parametrize("changes, pattern", [
    (dict(num_steps=2**30), r"training 1 run\(s\) \(T = 1073741824 steps"),
    (dict(labeled_batch_size=10**9), "Lower num_steps, num_frequencies, labeled_batch_size"),
])
def test_runs_larger_than_memory_are_refused_before_training(changes, pattern):
  with pytest.raises(qsg_jax.InsufficientMemoryError, match=pattern):
    _small_fit(**changes)


def test_pandas_nullable_columns_are_numbers_and_na_is_named():
  pd = pytest.importorskip("pandas")
  x, y = _ordinal()
  frame = pd.DataFrame(x[:60]).astype("Float64")
  labels = pd.Series(y[:60]).astype("Int64")
  expected, _, _ = _small_fit()
  got = qsg_jax.fit(frame, labels, x[60:], num_steps=64, num_frequencies=8,
                    unlabeled_batch_size=16, sigma=1.0, step_size=1.0, chunk_size=16)
  np.testing.assert_array_equal(got.model.coef, expected.model.coef)
  frame.iloc[4, 1] = pd.NA
  with pytest.raises(ValueError, match=r"x_labeled contains 1 NaN or infinite values .*row 4"):
    qsg_jax.fit(frame, labels, x[60:], num_steps=8)
  labels.iloc[3] = pd.NA
  with pytest.raises(ValueError, match=r"labels contain 1 NaN or infinite values \(first at row 3"):
    qsg_jax.fit(x[:60], labels, x[60:], num_steps=8)


def test_identical_points_get_a_zero_curvature_and_fit_refuses_them():
  x = np.full((400, 3), 0.5)
  y = np.repeat([0, 1, 2], 20)
  # K H = 0: the power iteration would blow rounding noise up to NaN; the curvature is 0.
  eta0 = auto_step.auto_step_size(x[:60], y, x[60:], 3, 0.1, 1e-3, 0.5, jax.random.key(0), 16)
  assert eta0 == qsg_jax.config.STEP_SIZE_MAX
  # Labeled rows that are one point teach no ranking: refused (with other unlabeled rows DSG
  # returned rounding noise, scores spread 3e-8, ranked as if a model).
  with pytest.raises(ValueError, match="x_labeled: every row is the same point"):
    qsg_jax.fit(x[:60], y, x[60:], num_steps=64, num_frequencies=8)


@pytest.mark.parametrize("schedule, message", [
    (lambda t: -0.05 + 0 * t, r"returned -0.05 at iteration 0"),
    # Slow: a second training program for the same check; its NaN step (and NaN scores after it)
    # reaching the step-size message, not a DivergenceError, is checked by default in
    # test_a_zero_step_is_refused_by_the_check_a_negative_one_meets.
    pytest.param(lambda t: jnp.where(t < 8, 0.5, jnp.nan), r"returned nan at iteration 8",
                 marks=pytest.mark.slow),
])
def test_a_schedule_returning_a_bad_step_is_refused(schedule, message):
  x, _, y_semi = _cv_data.semi_ordinal()
  with pytest.raises(ValueError, match=message):
    qsg_jax.fit(x[y_semi >= 0], y_semi[y_semi >= 0], x[y_semi < 0], step_size=schedule,
                **_cv_data.TINY)


def test_a_zero_step_is_refused_by_the_check_a_negative_one_meets():
  """A schedule returning 0 takes the path of -0.05 above (finite, <= 0; each schedule compiles
  its own training program): the check on the run's step sizes, named with the value 0. A NaN
  step from iteration 8 on (the scores NaN after it, as training leaves them) is named as the
  schedule's, not reported as a divergence."""
  check = qsg_jax._fit.check_divergence  # pylint: disable=protected-access
  eta = np.concatenate([[0.0], np.full(31, 0.5)])
  metrics = {"eta": eta, "max_abs_score": np.ones(32)}
  with pytest.raises(ValueError, match=r"returned 0 at iteration 0"):
    check(metrics, 1e4)
  late = np.arange(32) >= 8
  metrics = {"eta": np.where(late, np.nan, 0.5), "max_abs_score": np.where(late, np.nan, 1.0)}
  with pytest.raises(ValueError, match=r"returned nan at iteration 8"):
    check(metrics, 1e4)


@pytest.mark.parametrize("schedule, message", [
    (lambda: 0.1, "calling it failed with TypeError"),
    (lambda t: "fast", "calling it failed"),
    (lambda t: jnp.array([0.1, 0.2]), r"one number per iteration.*shape \(2,\)"),
])
def test_a_schedule_of_the_wrong_form_is_refused_before_training(schedule, message):
  x, _, y_semi = _cv_data.semi_ordinal()
  with pytest.raises(TypeError, match=message):
    qsg_jax.fit(x[y_semi >= 0], y_semi[y_semi >= 0], x[y_semi < 0], step_size=schedule,
                **_cv_data.TINY)


def test_fit_names_bad_gamma_and_ragged_points():
  x, _, y_semi = _cv_data.semi_ordinal()
  labeled = y_semi >= 0
  with pytest.raises(TypeError, match="gamma must be a number in"):
    qsg_jax.fit(x[labeled], y_semi[labeled], x[~labeled], gamma=None, **_cv_data.TINY)
  with pytest.raises(ValueError, match="rectangular"):
    qsg_jax.fit([[0.1, 0.2], [0.3]], [0, 1], **_cv_data.TINY)


# ---- Bad inputs (RELIABILITY.md): counts, keys, step sizes, data -------------------------------

def _tiny_fit(**changes):
  """qsg_jax.fit on the tiny toy problem, with ``changes`` to its arguments."""
  args = dict(x_labeled=toy.X_L, y_labeled=toy.Y_L, x_unlabeled=toy.X_U, key=0, **toy.TINY)
  args.update(changes)
  return qsg_jax.fit(args.pop("x_labeled"), args.pop("y_labeled"), args.pop("x_unlabeled"),
                     **args)


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
    _tiny_fit(**{name: value})


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
    _tiny_fit(**changes)


@pytest.mark.parametrize("name", ["x_labeled", "x_unlabeled"])
def test_fit_refuses_sparse_input_with_the_fix(name):
  dense = toy.X_L if name == "x_labeled" else toy.X_U
  with pytest.raises(TypeError, match=rf"{name} is a scipy sparse matrix of shape .*"
                                      rf"Pass {name}.toarray\(\)"):
    _tiny_fit(**{name: sp.csr_matrix(dense)})


@pytest.mark.parametrize("solver", ["dsg", "direct"])
def test_fit_and_minmax_name_date_columns_not_nanoseconds(solver):
  """Sweep V: a frame's date column was read as nanoseconds; the messages blamed norms and
  sigma, and the advised data.minmax_fit said "encode categorical columns"."""
  pd = pytest.importorskip("pandas")
  dates = pd.date_range("2020-01-01", periods=len(toy.X_L), freq="h")
  frame = pd.DataFrame(toy.X_L, columns=[f"c{j}" for j in range(toy.X_L.shape[1])]).assign(
      t=dates)
  with pytest.raises(ValueError, match=r"x_labeled has dates or durations in column\(s\) t; "
                     r"qsg_jax takes numbers.*total_seconds"):
    qsg_jax.fit(frame, toy.Y_L, toy.X_U, key=0, solver=solver)
  with pytest.raises(ValueError, match=r"minmax_fit x has dates or durations in column\(s\) t"):
    qsg_jax.data.minmax_fit(frame)


def test_dsg_fit_refuses_an_iterator_of_chunks_with_the_fix():
  """An iterator reaches DSG's array check as a 0-d object array ("received shape ()"); the
  message names it and the solver that reads chunks."""
  with pytest.raises(TypeError, match=r"x_unlabeled is an iterator \(generator\).*solver='direct'"):
    _tiny_fit(x_unlabeled=(chunk for chunk in [toy.X_U]))


@pytest.mark.parametrize("name, row, col", [("x_labeled", 7, 2), ("x_unlabeled", 11, 0)])
def test_fit_reports_nan_at_the_users_row(name, row, col):
  dense = toy.X_L if name == "x_labeled" else toy.X_U
  with pytest.raises(ValueError, match=rf"{name} contains 1 NaN .*\(first at row {row}\), "
                                       rf"e.g. column {col} = nan"):
    _tiny_fit(**{name: toy.with_value(dense, (row, col), np.nan)})


def test_fit_refuses_float64_that_overflows_float32():
  x = toy.with_value(toy.X_L, (5, 1), 1e300)
  with pytest.raises(ValueError, match=r"x_labeled has 1 values beyond the float32 range .*row 5, "
                                       r"column 1: 1e\+300.*minmax_fit"):
    _tiny_fit(x_labeled=x)


@pytest.mark.parametrize("labels, error, pattern", [
    (toy.Y_L + 1, ValueError, r"labels must be 0..k-1; got 1..3 \(no class 0\) -- subtract 1"),
    (2 * toy.Y_B - 1, ValueError, r"binary labels are 0 = negative, 1 = positive: map -1/\+1"),
    (np.where(toy.Y_L == 2, -1, toy.Y_L), ValueError,
     "-1 marks unlabeled points only in the scikit-learn"),
    (np.where(toy.Y_L == 2, -7, toy.Y_L), ValueError,
     "received -7 at row 2 .*map classes to 0..k-1"),
    (toy.with_value(toy.Y_L, 2, np.nan), ValueError,
     r"labels contain 1 NaN or infinite values \(first at row 2\)"),
    (np.array(list("abc") * 8), TypeError, "labels must be integers 0..k-1; received dtype <U1"),
    (toy.Y_L + 0.5, ValueError, "labels must be integers 0..k-1; received 0.5 at row 0"),
    (sp.csr_matrix(toy.Y_L), TypeError, "labels is a scipy sparse matrix"),
])
def test_fit_label_messages(labels, error, pattern):
  with pytest.raises(error, match=pattern):
    _tiny_fit(y_labeled=labels)


def test_huge_label_values_give_short_messages():
  labels = np.where(toy.Y_L == 2, 10**12, toy.Y_L)
  with pytest.raises(ValueError, match=r"labels go up to 1e\+12") as info:
    _tiny_fit(y_labeled=labels)
  assert len(str(info.value)) < 400
  pattern = r"must lie in 0..2 \(num_classes=3\); received 1e\+12"
  with pytest.raises(ValueError, match=pattern) as info:
    _tiny_fit(y_labeled=labels, num_classes=3)
  assert len(str(info.value)) < 400
  many = np.arange(24) % 2          # 498 of 500 classes without a point: the list is capped
  with pytest.raises(ValueError, match=r"class\(es\) \[2, 3, .*more\)") as info:
    _tiny_fit(y_labeled=many, num_classes=500)
  assert len(str(info.value)) < 400


def test_fit_warns_about_unscaled_features_with_the_fix():
  # divergence_threshold=0 stops fit right after the warning, before anything is compiled.
  pattern = r"x_labeled has values up to \|x\| = 2.99e\+03 .*minmax_fit"
  with pytest.warns(UserWarning, match=pattern):
    with pytest.raises(ValueError, match="divergence_threshold"):
      _tiny_fit(x_labeled=toy.X_L * 3000, sigma=1e-6, divergence_threshold=0)


def test_fit_surfaces_the_prime_num_steps_warning_at_the_callers_line():
  with pytest.warns(UserWarning, match="num_steps=37 has no divisor near chunk_size=32") as record:
    with pytest.raises(ValueError, match="divergence_threshold"):
      _tiny_fit(num_steps=37, chunk_size=32, divergence_threshold=0)
  assert any(w.filename == __file__ for w in record)


def test_decision_function_checks_points():
  result, _, _ = _small_fit()     # the fit other tests here make: compiled once per process
  with pytest.raises(ValueError, match=r"x contains 1 NaN .*\(first at row 4\)"):
    qsg_jax.decision_function(result, toy.with_value(toy.X_U, (4, 0), np.nan))
  with pytest.raises(TypeError, match=r"x is a scipy sparse matrix"):
    qsg_jax.predict(result, sp.csr_matrix(toy.X_U))
  with pytest.raises(ValueError, match="beyond the float32 range"):
    qsg_jax.decision_function(result, np.full((2, 3), 1e300))
  assert np.isfinite(qsg_jax.decision_function(result, toy.X_U)).all()
  direct_fit = qsg_jax.fit(toy.X_L, toy.Y_L, toy.X_U, solver="direct", num_landmarks=8)
  with pytest.raises(ValueError, match=r"norms up to 1e\+20: their squares .* overflow float32"):
    qsg_jax.decision_function(direct_fit, toy.with_value(toy.X_U, (2, 1), 1e20))  # NaN before


def test_a_slow_num_steps_warns_at_the_callers_line():
  x, y = _ordinal()
  # divergence_threshold=0 stops fit right after the warning, before anything is compiled.
  with pytest.warns(qsg_jax.SlowConfigWarning, match="num_steps=37 has no divisor") as caught:
    with pytest.raises(ValueError, match="divergence_threshold"):
      qsg_jax.fit(x[:60], y[:60], x[60:], num_steps=37, num_frequencies=4, step_size=1.0,
                  divergence_threshold=0)
  assert caught[0].filename == __file__


def test_direct_fit_warnings_point_at_the_callers_line():
  x, y = _ordinal()
  with pytest.warns(qsg_jax.UnscaledFeaturesWarning) as caught:
    qsg_jax.fit(100 * x[:60], y[:60], 100 * x[60:], solver="direct", sigma=1e-4)
  assert caught[0].filename == __file__
  with pytest.warns(qsg_jax.direct.ApproximationWarning, match="raise num_features") as caught:
    qsg_jax.fit(x[:60], y[:60], x[60:], solver="direct", sigma=10.0, num_landmarks=8)
  assert caught[0].filename == __file__


def test_new_numbers_of_points_reuse_the_scoring_programs_and_change_no_score():
  """decision_function, split_scores, a frozen model and the direct solver's scores pad points
  into power-of-two row buckets: 9..16 points compile once per entry point, and every score
  equals the unpadded call's (a row's score does not depend on its batch: scoring.ROW_TILE)."""
  rng = np.random.default_rng(0)
  x = rng.random((160, 3)).astype(np.float32)
  y = rng.integers(0, 3, 160)
  dsg = qsg_jax.fit(x[:60], y[:60], x[60:], key=0, num_steps=16)
  fourier = qsg_jax.direct.fit(x[:60], y[:60], x[60:], key=0, feature_map="rff",
                               num_features=32, num_frequencies=8, split_lam=1.0)
  nystrom = qsg_jax.fit(x[:60], y[:60], x[60:], key=0, solver="direct", num_landmarks=16)
  frozen = io.freeze(dsg)
  compiles = []
  listener = lambda event, duration, **kwargs: compiles.append(kwargs.get("fun_name")) if (
      event.endswith("backend_compile_duration")) else None
  entries = {
      "decision_function": (lambda xs: qsg_jax.decision_function(dsg, xs), lambda xs: np.asarray(
          engine.model_scores(dsg.model, jnp.asarray(xs), dsg.config.block_group))),
      "split_scores": (lambda xs: qsg_jax.split_scores(dsg, xs), None),
      "direct split_scores": (lambda xs: qsg_jax.direct.split_scores(fourier.model, xs),
                              lambda xs: np.asarray(engine.split_scores(fourier.model,
                                                                        jnp.asarray(xs), 2))),   # its T = 2 blocks
      "frozen": (lambda xs: frozen.decision_function(xs), None),
      "direct fourier": (lambda xs: qsg_jax.direct.decision_function(fourier.model, xs), None),
      "direct nystrom": (lambda xs: qsg_jax.decision_function(nystrom, xs), None),
  }
  for name, (padded, unpadded) in entries.items():
    first = padded(x[:9])
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
      later = {n: padded(x[:n]) for n in (10, 13, 16)}
    finally:
      jax.monitoring.unregister_event_duration_listener(listener)
    assert not compiles, (name, compiles)
    for n, scores in later.items():
      np.testing.assert_array_equal(scores[:9], first, err_msg=name)
      if unpadded is not None:
        np.testing.assert_allclose(scores, unpadded(x[:n]), rtol=1e-6, atol=1e-6, err_msg=name)


def test_new_data_sizes_in_a_bucket_compile_nothing_and_train_as_unpadded():
  """fit pads the labeled and unlabeled rows to ``engine.bucket_data``'s buckets (the curvature
  of the auto step likewise): 60 / 340 points and 57 / 330 share the training programs, and the padded
  fit equals ``engine.train`` on the data itself (to float rounding: sums over more zeros)."""
  x, y = _ordinal()
  args = dict(num_steps=64, num_frequencies=8, unlabeled_batch_size=16, sigma=1.0, lam=1e-3)
  qsg_jax.fit(x[:60], y[:60], x[60:], chunk_size=16, **args)
  compiles = []
  listener = lambda event, duration, **kwargs: compiles.append(kwargs.get("fun_name")) if (
      event.endswith("backend_compile_duration")) else None
  jax.monitoring.register_event_duration_secs_listener(listener)
  try:
    result = qsg_jax.fit(x[:57], y[:57], x[70:], chunk_size=16, **args)
  finally:
    jax.monitoring.unregister_event_duration_listener(listener)
  # Only small eager operations on the unpadded results compile (slices, the thresholds' fit).
  assert not [name for name in compiles if "train_steps" in name or "curvature" in name], compiles
  assert result.state.f_labeled.shape == (57,) and result.state.pos_w.shape == (2, 57)
  config = qsg_jax.FitConfig(**args)
  inputs = qsg_jax._fit.checked_inputs(x[:57], y[:57], x[70:], config.sigma)
  hyper = qsg_jax._fit.hyperparams_of(inputs, config, jax.random.key(0))
  data = engine.TrainData(*inputs[:3])
  plain, _ = engine.train(engine.init(jax.random.key(0), data, result.config), data, hyper,
                          result.config, 64)
  np.testing.assert_allclose(result.state.scale * result.state.coef, plain.scale * plain.coef,
                             rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(result.state.f_labeled, plain.f_labeled, rtol=1e-4, atol=1e-5)


def test_shards_and_spent_iterators_are_named_in_the_users_terms():
  """Sweep L: num_shards=3 without a mesh blamed EngineConfig.unlabeled_batch_size, a setting
  the user never made; an iterator of unlabeled chunks already consumed read as 'no unlabeled
  points' without the likely cause."""
  x, y = _ordinal()
  with pytest.raises(ValueError, match=r"^num_shards=3 must divide unlabeled_batch_size=16 "):
    _small_fit(num_shards=3)
  chunks = iter([x[60:200], x[200:]])
  list(chunks)   # consumed
  with pytest.raises(ValueError, match=r"x_unlabeled held no row: an empty array, or an iterator "
                                       r"already consumed\?"):
    qsg_jax.direct.fit(x[:60], y[:60], chunks, gamma=0.5, sigma=1.0, lam=1e-3)
