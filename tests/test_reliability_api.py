"""Bad inputs found by the second audit (training, estimators, pure API, model files, CLI flags):
each gets a short error that names the argument, or a correct result."""

import subprocess
import sys
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import qsg_jax
from qsg_jax.engine import auto_step
from qsg_jax import data as data_lib
from qsg_jax import engine
from qsg_jax import estimators
from qsg_jax import io
from qsg_jax import model_selection
from qsg_jax.errors import UnscaledFeaturesWarning
from tests.conftest import REPO_ROOT

_F = dict(num_steps=32, num_frequencies=8, unlabeled_batch_size=16)


def _ordinal(n=90, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.random((n, 3))
  y = np.digitize(x.sum(axis=1), [1.2, 1.8])
  y_semi = y.copy()
  y_semi[::3] = -1
  return x, y, y_semi


def test_identical_points_get_a_zero_curvature_and_train():
  x = np.full((30, 3), 0.5)
  y = np.repeat([0, 1, 2], 10)
  # K H = 0: the power iteration would blow rounding noise up to NaN; the curvature is 0.
  eta0 = auto_step.auto_step_size(x, y, x, 3, 0.1, 1e-3, 0.5, jax.random.key(0), 16)
  assert eta0 == qsg_jax.config.STEP_SIZE_MAX
  result = qsg_jax.fit(x, y, x, **_F)
  scores = qsg_jax.decision_function(result, x)
  assert np.all(np.isfinite(scores)) and np.ptp(scores) == 0   # nothing to rank: ties


@pytest.mark.parametrize("schedule, message", [
    (lambda t: -0.05 + 0 * t, r"returned -0.05 at iteration 0"),
    (lambda t: 0.0 * t, r"returned 0 at iteration 0"),
    (lambda t: jnp.where(t < 8, 0.5, jnp.nan), r"returned nan at iteration 8"),
])
def test_a_schedule_returning_a_bad_step_is_refused(schedule, message):
  x, _, y_semi = _ordinal()
  with pytest.raises(ValueError, match=message):
    qsg_jax.fit(x[y_semi >= 0], y_semi[y_semi >= 0], x[y_semi < 0], step_size=schedule, **_F)


@pytest.mark.parametrize("schedule, message", [
    (lambda: 0.1, "calling it failed with TypeError"),
    (lambda t: "fast", "calling it failed"),
    (lambda t: jnp.array([0.1, 0.2]), r"one number per iteration.*shape \(2,\)"),
])
def test_a_schedule_of_the_wrong_form_is_refused_before_training(schedule, message):
  x, _, y_semi = _ordinal()
  with pytest.raises(TypeError, match=message):
    qsg_jax.fit(x[y_semi >= 0], y_semi[y_semi >= 0], x[y_semi < 0], step_size=schedule, **_F)


def test_fit_names_bad_gamma_and_ragged_points():
  x, _, y_semi = _ordinal()
  labeled = y_semi >= 0
  with pytest.raises(TypeError, match="gamma must be a number in"):
    qsg_jax.fit(x[labeled], y_semi[labeled], x[~labeled], gamma=None, **_F)
  with pytest.raises(ValueError, match="rectangular"):
    qsg_jax.fit([[0.1, 0.2], [0.3]], [0, 1], **_F)


def test_model_files_keep_numpy_typed_parameters_and_name_a_missing_folder(tmp_path):
  x, _, y_semi = _ordinal()
  model = estimators.QS3ORAO(unlabeled_label=-1, sigma=np.float32(0.25),
                             gamma=np.array([0.3, 0.6]), random_state=np.int64(7),
                             lam=jnp.float32(1e-3), **_F).fit(x, y_semi)
  io.save(model, tmp_path / "m.npz")
  loaded = io.load(tmp_path / "m.npz")
  params = loaded.get_params()
  assert params["gamma"] == [0.3, 0.6] and params["random_state"] == 7
  assert params["sigma"] == pytest.approx(0.25) and params["lam"] == pytest.approx(1e-3)
  refit = lambda: estimators.QS3ORAO(**params).fit(x, y_semi).decision_function(x)
  np.testing.assert_array_equal(refit(), refit())
  with pytest.raises(FileNotFoundError, match=r"its folder .*nowhere' does not exist"):
    io.save(model, tmp_path / "nowhere" / "m.npz")


def test_cv_estimator_cross_validates_on_the_points_its_refit_sees():
  x, _, y_semi = _ordinal()
  grid = {"lam": [1e-3], "sigma": [1e-3, 3.0], "gamma": [0.5]}
  fits = [estimators.QS3ORAOCV(unlabeled_label=-1, grid=grid, cv=3, **_F).fit(scale * x, y_semi)
          for scale in (1.0, 100.0)]
  # Min-max scaling makes 100 x the same data as x: same CV scores, same pick, same model.
  np.testing.assert_allclose(fits[0].cv_results_["mean_test_score"],
                             fits[1].cv_results_["mean_test_score"], rtol=1e-6)
  assert fits[0].best_params_ == fits[1].best_params_
  frame = pd.DataFrame(x, columns=["a", "b", "c"])
  model = estimators.QS3ORAOCV(unlabeled_label=-1, grid=grid, cv=3, **_F).fit(frame, y_semi)
  np.testing.assert_array_equal(model.feature_names_in_, ["a", "b", "c"])
  with pytest.raises(ValueError, match="same order"):
    model.predict(frame[["c", "b", "a"]])
  search = estimators.QS3ORAOCV(unlabeled_label=-1, grid=grid, cv=3, **_F)
  with pytest.raises(ValueError, match="cv_unlabeled must be a whole number >= 1"):
    search.set_params(cv_unlabeled=-1).fit(x, y_semi)
  with pytest.raises(ValueError, match="1 NaN / NA labels"):
    search.set_params(cv_unlabeled=None).fit(x, np.where(np.arange(90) == 5, np.nan, y_semi))


@pytest.mark.parametrize("change, message", [
    (lambda x, y: (x[:, 0], y), r"X must be 2-D \[n_samples, n_features\]; received shape"),
    (lambda x, y: (np.where(np.arange(90)[:, None] == 7, np.nan, x), y),
     r"X contains NaN or inf: 1 rows, the first at row 7 \(column 0"),
    (lambda x, y: (np.c_[x[:, :2], np.where(np.arange(90) % 2, 1e308, -1e308)], y),
     "column 2 spans more than float64 holds"),
])
def test_estimator_input_errors_are_short_and_name_the_row(change, message):
  x, _, y_semi = _ordinal()
  with pytest.raises(ValueError, match=message) as error:
    estimators.QS3ORAO(unlabeled_label=-1, **_F).fit(*change(x, y_semi))
  assert len(str(error.value)) < 300


@pytest.mark.parametrize("params, message", [
    (dict(scale_inputs="no"), "scale_inputs must be True or False"),
    (dict(random_state=-1), "random_state must be an int >= 0"),
    (dict(unlabeled_label=np.nan), "unlabeled_label=nan is not supported"),
])
def test_estimator_parameters_are_checked(params, message):
  x, _, y_semi = _ordinal()
  with pytest.raises(ValueError, match=message):
    estimators.QS3ORAO(**dict(dict(unlabeled_label=-1, **_F), **params)).fit(x, y_semi)


def test_gamma_is_checked_on_fully_labeled_data_too():
  x, y, _ = _ordinal()
  with pytest.raises(ValueError, match=r"gamma must lie in \[0, 1\]"):
    estimators.QS3ORAO(unlabeled_label=-1, gamma=5, **_F).fit(x, y)


def test_pure_api_makes_fits_checks_on_concrete_inputs():
  x, y, _ = _ordinal()
  config = engine.EngineConfig(num_classes=3, num_steps=32, chunk_size=8, block_group=8,
                               num_frequencies=8, unlabeled_batch_size=16)
  data = engine.TrainData(jnp.asarray(x[:60], jnp.float32), jnp.asarray(y[:60]),
                          jnp.asarray(x[60:], jnp.float32))
  with pytest.raises(ValueError, match=r"labels must be 0\.\.k-1|subtract 1"):
    engine.init(jax.random.key(0), data._replace(y_labeled=data.y_labeled + 1), config)
  with pytest.raises(ValueError, match=r"no point of class\(es\) \[3, 4\]"):
    engine.init(jax.random.key(0), data, config.replace(num_classes=5))
  bad_x = data.x_labeled.at[4, 1].set(jnp.nan)
  with pytest.raises(ValueError, match="data.x_labeled"):
    engine.init(jax.random.key(0), data._replace(x_labeled=bad_x), config)
  state = engine.init(0, data, config)      # an int seed is accepted at this boundary too
  good = engine.Hyperparams(jnp.float32(1.0), jnp.float32(1e-3), jnp.full(2, 0.5), jnp.float32(1))
  for name, value, message in (("gamma", jnp.array([0.5, 1.5]), r"hyper.gamma must be in \[0, 1\]"),
                               ("gamma", jnp.full(3, 0.5), r"shape \[k-1\] = \[2\]"),
                               ("sigma", jnp.float32(-1.0), "hyper.sigma must be finite and > 0"),
                               ("lam", jnp.float32(jnp.nan), "hyper.lam must be finite")):
    with pytest.raises(ValueError, match=message):
      engine.train(state, data, good._replace(**{name: value}), config, 8)
  # Traced inputs are not checked (vmap over a grid still works).
  grid = good._replace(lam=jnp.array([1e-3, 1e-2]))
  _, metrics = jax.vmap(lambda h: engine.train(state, data, h, config, 8),
                        in_axes=(engine.Hyperparams(None, 0, None, None),))(grid)
  assert metrics["eta"].shape == (2, 8)


def test_cross_validate_warns_on_unscaled_features_and_minmax_refuses_overflow():
  x, y, _ = _ordinal()
  with pytest.warns(UnscaledFeaturesWarning):
    model_selection.cross_validate(1e4 * x, y, None, grid={"lam": [1e-3], "sigma": [1.0],
                                                           "gamma": [1.0]}, num_folds=3, **_F)
  with pytest.raises(ValueError, match="spans more than float64 holds"):
    data_lib.minmax_fit([[1e308], [-1e308]])


def test_comparison_flags_refuse_bad_lists_before_loading_data():
  for flag, message in (("--datasets=", "--datasets is empty"),
                        ("--cv_lam=abc", "--cv_lam must be a comma-separated list of numbers"),
                        ("--cv_step_size=fast", "numbers > 0 or auto")):
    proc = subprocess.run([sys.executable, "-m", "experiments.auc_comparison", flag,
                           "--output_dir=/nonexistent/never_written"], cwd=REPO_ROOT, text=True,
                          capture_output=True, check=False)
    assert proc.returncode != 0 and message in proc.stderr + proc.stdout, proc.stderr[-500:]
    assert "Traceback" not in proc.stderr

