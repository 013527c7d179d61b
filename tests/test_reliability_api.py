"""Bad inputs of the second audit that belong to the pure engine and the experiments' flags
(the others moved to the test file of their module), and the functional API's sweep of
2026-11-29 across modules: short errors that name the argument, never a silent change."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import qsg_jax
from qsg_jax import baselines
from qsg_jax import direct
from qsg_jax import engine
from qsg_jax import model_selection
from qsg_jax import online_pairwise
from qsg_jax import roc_svm
from tests import _cv_data


def test_pure_api_makes_fits_checks_on_concrete_inputs():
  x, y, _ = _cv_data.semi_ordinal()
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
  # Traced inputs are not checked (vmap over a grid still works). The checks happen while
  # tracing, so jax.eval_shape sees them without compiling the vmapped run; running vmapped
  # trainings over a grid is test_model_selection.py's test_vmapped_cv_equals_a_loop_of_fits_on_
  # each_fold (model_selection vmaps init + train over Hyperparams).
  grid = good._replace(lam=jnp.array([1e-3, 1e-2]))
  _, metrics = jax.eval_shape(jax.vmap(lambda h: engine.train(state, data, h, config, 8),
                                       in_axes=(engine.Hyperparams(None, 0, None, None),)), grid)
  assert metrics["eta"].shape == (2, 8)


# ---- The functional API's sweep of 2026-11-29: each input below was answered silently, or by an
# error from inside JAX / NumPy, or with advice that could not help ------------------------------

def _small():
  rng = np.random.default_rng(0)
  x = rng.random((60, 3)).astype(np.float32)
  return x, (x[:, 0] > 0.5).astype(np.int64), rng.random((40, 3)).astype(np.float32)


def test_zero_features_bfloat16_and_jax_integers_at_the_boundary():
  x, y, xu = _small()
  for dsg_steps in ({}, {"num_steps": 32}):     # the direct solver, then DSG
    with pytest.raises(ValueError, match=r"x_labeled has 0 features \(shape \(60, 0\)\)"):
      qsg_jax.fit(x[:, :0], y, xu[:, :0], **dsg_steps)
  # JAX's bfloat16 is read as float32 (float16 already was): the same fit as the float32 values.
  halved = lambda a: np.asarray(jnp.asarray(a, jnp.bfloat16), np.float32)
  expected = qsg_jax.fit(halved(x), y, halved(xu), solver="direct")
  result = qsg_jax.fit(jnp.asarray(x, jnp.bfloat16), y, jnp.asarray(xu, jnp.bfloat16),
                       solver="direct")
  np.testing.assert_allclose(qsg_jax.decision_function(result, halved(x)),
                             qsg_jax.decision_function(expected, halved(x)), rtol=1e-5, atol=1e-6)
  scores = jnp.asarray(x[:, 0], jnp.bfloat16)
  assert float(qsg_jax.binary_auc(scores, y)) == pytest.approx(
      roc_auc_score(y, np.asarray(scores, np.float32)))
  # Counts and seeds computed with jnp (concrete 0-d arrays) are the whole numbers they hold.
  a = qsg_jax.fit(x, y, xu, solver="dsg", num_steps=jnp.int32(32), key=jnp.int32(3),
                  num_classes=jnp.max(jnp.asarray(y)) + 1)
  b = qsg_jax.fit(x, y, xu, solver="dsg", num_steps=32, key=3, num_classes=2)
  np.testing.assert_array_equal(qsg_jax.decision_function(a, x), qsg_jax.decision_function(b, x))


def test_options_that_would_be_ignored_are_refused_naming_where_they_apply():
  x, y, xu = _small()
  with pytest.raises(ValueError, match=r"landmarks has no effect with feature_map='rff'"):
    direct.fit(x, y, xu, feature_map="rff", num_features=64, landmarks=x[:7])
  with pytest.raises(ValueError, match=r"num_frequencies=3 has no effect with feature_map='nystrom'"):
    direct.fit(x, y, xu, num_frequencies=3)
  with pytest.raises(ValueError, match=r"num_features=3 has no effect with feature_map='nystrom'"):
    direct.fit(x, y, xu, num_features=3, landmarks=x[:7])
  assert direct.fit(x, y, xu, landmarks=x[:7]).model.landmarks.shape == (7, 3)
  for kwargs in (dict(num_landmarks=5), dict(landmarks="kmeans"), dict(kmeans_iters=3),
                 dict(kernel="gaussian", landmarks="uniform"), dict(pairs_per_block=7)):
    name = [k for k in kwargs if k != "kernel"][0]
    with pytest.raises(ValueError, match=f"{name}=.* has no effect with kernel="):
      roc_svm.fit(x, y, **kwargs)
  roc_svm.fit(x, y, risk="full", pairs_per_block=7, max_steps=5)   # where it applies: accepted
  with pytest.raises(ValueError, match="chunk_size=0 applies to the kernel models only"):
    baselines.decision_function(baselines.fit_svorex(x, y), x, chunk_size=0)


def test_gamma_lam_and_grids_are_refused_rather_than_changed():
  x, y, xu = _small()
  with pytest.raises(ValueError, match=r"gamma must be one number here.*received \[0\.0, 1\.0\]"):
    direct.defaults.choose(x, y, xu, gamma=[0.0, 1.0])            # was averaged to 0.5
  with pytest.raises(ValueError, match=r"no unlabeled data but gamma=0\.3 < 1"):
    direct.defaults.choose(x, y, None, gamma=0.3)                 # was replaced by 1.0
  with pytest.raises(ValueError, match=r"no unlabeled data but gamma=\[0\.3\] < 1"):
    direct.fit(x, y, None, gamma=0.3)                             # no float32 noise echoed
  with pytest.raises(ValueError, match=r"lam=1e\+39 is beyond float32's range"):
    qsg_jax.fit(x, y, xu, num_steps=32, lam=1e39)                 # was 'hyper.lam ... inf'
  with pytest.warns(UserWarning, match=r"every weight of the solution is below 1e-30"):
    tied = qsg_jax.fit(x, y, xu, solver="direct", lam=1e38)       # all scores tied, silently
  assert np.unique(qsg_jax.decision_function(tied, x)).size == 1
  with warnings.catch_warnings():   # tiny but distinct scores still rank: no warning (it said
    warnings.simplefilter("error")   # "underflow and tie" for 60 distinct scores)
    tiny = qsg_jax.fit(x, y, xu, solver="direct", lam=1e30)
  assert np.unique(qsg_jax.decision_function(tiny, x)).size == x.shape[0]
  with pytest.raises(ValueError, match=r"grid\['sigma'\] is empty"):
    model_selection.fit_over_grid(x, y, xu, x, {"sigma": []}, num_steps=32)
  one = model_selection.fit_over_grid(x, y, xu, x, {"sigma": 0.5, "step_size": "auto"},
                                      num_steps=32)                # was iterated per character
  assert [p["sigma"] for p in one["params"]] == [0.5]


def test_metrics_and_messages_of_the_sweep():
  big = 2**24
  assert float(qsg_jax.metrics.mean_absolute_error(np.array([big + 1, 5]), np.array([big, 5]))) \
      == pytest.approx(0.5)                                         # float32 said 0
  with pytest.raises(ValueError, match="predicted and labels are empty"):
    qsg_jax.metrics.mean_absolute_error(np.zeros(0, int), np.zeros(0, int))
  x, y, xu = _small()
  with pytest.raises(ValueError, match=r"labels must be 0\.\.1 \(0\.\.k-1 with k classes\)"):
    baselines.fit_pnu_auc(x, 2 * y - 1, xu, lam=1e-3, sigma=1.0, gamma=0.5)
  three = np.array([0] * 5 + [1] + [2] * 6)
  with pytest.raises(ValueError, match="Class 1 has a single labeled point, which no fold count"):
    qsg_jax.cross_validate(x[:12], three, xu, grid={"lam": [1e-3], "sigma": [1.0],
                                                    "gamma": [0.5]}, solver="direct", num_folds=2)
  with pytest.raises(TypeError, match=r"received a DirectFit .*qsg_jax\.direct\.decision_function"):
    qsg_jax.decision_function(direct.fit(x, y, xu), x)
  with pytest.raises(TypeError, match=r"received FitResult\. A FitResult of qsg_jax\.fit scores "
                                      r"with qsg_jax\.decision_function"):
    direct.decision_function(qsg_jax.fit(x, y, xu, solver="direct"), x)
  with pytest.raises(TypeError, match=r"chunks is one \(x, y\) pair .*pass \[\(x, y\)\]"):
    online_pairwise.fit_stream((x, y.astype(np.float32)), mu=1.0)


@pytest.mark.parametrize("solver", ["direct", "dsg"])
def test_a_data_frame_is_scored_by_its_column_names_not_by_position(solver, tmp_path):
  pd = pytest.importorskip("pandas")
  x, y, xu = _small()
  frame = pd.DataFrame(x, columns=["a", "b", "c"])
  unlabeled = pd.DataFrame(xu, columns=["a", "b", "c"])
  steps = {"num_steps": 32} if solver == "dsg" else {}
  result = qsg_jax.fit(frame, y, unlabeled, solver=solver, **steps)
  assert result.feature_names == ("a", "b", "c")
  np.testing.assert_array_equal(qsg_jax.decision_function(result, frame),
                                qsg_jax.decision_function(result, x))   # an array: by position
  reordered = r"x has the columns of the training data in another order \(column 0 is 'b', was "
  with pytest.raises(ValueError, match=reordered + r"'a'\).*Reorder them: x\[\['a', 'b', 'c'\]\]"):
    qsg_jax.decision_function(result, frame[["b", "a", "c"]])   # scored silently wrong before
  with pytest.raises(ValueError, match=r"x's columns differ .*missing \[c\], unexpected \[z\]"):
    qsg_jax.predict(result, frame.rename(columns={"c": "z"}))
  with pytest.raises(ValueError, match="x_unlabeled has the columns of the training data in "):
    qsg_jax.fit(frame, y, unlabeled[["c", "b", "a"]], solver=solver, **steps)
  qsg_jax.io.save(result, tmp_path / "model.npz")                # the names travel in the file
  loaded = qsg_jax.io.load(tmp_path / "model.npz")
  assert loaded.feature_names == ("a", "b", "c")
  np.testing.assert_array_equal(loaded.decision_function(frame),
                                qsg_jax.decision_function(result, x))
  with pytest.raises(ValueError, match=reordered):
    loaded.decision_function(frame[["b", "a", "c"]])
  if solver == "direct":   # qsg_jax.direct: the DirectFit, and chunks of an iterator
    fitted = direct.fit(frame, y, unlabeled)
    with pytest.raises(ValueError, match=reordered):
      direct.decision_function(fitted, frame[["b", "a", "c"]])
    with pytest.raises(ValueError, match=r"chunk 1 of x_unlabeled has the columns of x_labeled "
                                         r"in another order .*chunk\[\['a', 'b', 'c'\]\]"):
      direct.fit(frame, y, iter([unlabeled[:20], unlabeled[20:][["c", "a", "b"]]]))
    with pytest.raises(ValueError, match="x_unlabeled has the columns of the training data in "):
      direct.cross_validate(frame, y, unlabeled[["c", "b", "a"]],
                            grid={"lam": [1e-3], "sigma": [1.0], "gamma": [0.5]}, num_folds=2)


def test_the_baselines_and_roc_svm_keep_a_frames_column_names_too():
  pd = pytest.importorskip("pandas")
  x, y, xu = _small()
  frame = pd.DataFrame(x, columns=["a", "b", "c"])
  unlabeled = pd.DataFrame(xu, columns=["a", "b", "c"])
  swapped = frame[["c", "b", "a"]]
  reordered = r"x has the columns of the training data in another order \(column 0 is 'c', was 'a'"
  fits = {
      "samult": lambda: baselines.fit_samult(frame, y, unlabeled, lam=1e-3, sigma=1.0, gamma=0.5),
      "pnu_auc": lambda: baselines.fit_pnu_auc(frame, y, unlabeled, lam=1e-3, sigma=1.0,
                                               gamma=0.5),
      "svorex": lambda: baselines.fit_svorex(frame, y, c=1.0, sigma=1.0),
  }
  for name, fit in fits.items():
    model = fit()
    np.testing.assert_allclose(baselines.decision_function(model, frame),
                               baselines.decision_function(model, x), err_msg=name)
    with pytest.raises(ValueError, match=reordered):
      baselines.decision_function(model, swapped)
  with pytest.raises(ValueError, match="x_unlabeled has the columns of the training data in "):
    baselines.fit_pnu_auc(frame, y, unlabeled[["b", "a", "c"]], lam=1e-3, sigma=1.0, gamma=0.5)
  fitted = roc_svm.fit(frame, y, kernel="linear")
  np.testing.assert_allclose(roc_svm.decision_function(fitted.model, frame),
                             roc_svm.decision_function(fitted.model, x))
  with pytest.raises(ValueError, match=reordered):
    roc_svm.decision_function(fitted.model, swapped)


def test_a_column_float32_cannot_resolve_is_said_not_lost():
  """1 + 1e-9 z in float64: one value in float32, where qsg_jax computes; the fits ranked at
  chance (0.51-0.54 against 0.98) without a word."""
  x, y, xu = _small()
  x64 = x.astype(np.float64)
  x64[:, 0] = 1.0 + 1e-9 * x64[:, 0]
  pattern = r"x_labeled column 0 varies by 9.*e-10 around 1: float32.*keeps about 1 distinct"
  with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning, match=pattern):
    result = qsg_jax.fit(x64, y, xu, solver="direct")
  near = np.array([[0.5, 0.5, 0.5], [0.5 + 1e-9, 0.5, 0.5]])   # scored: a batch may be this close
  assert qsg_jax.decision_function(result, near).shape == (2,)   # (no warning: errors here)
  semi = np.where(np.arange(y.size) % 4 == 0, -1, y)
  with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning, match=r"X column 0 varies by"):
    qsg_jax.QSGS2AUC(scale_inputs=False, length_scale=1.0, lam=1e-3, labeled_weight=0.5).fit(
        x64, semi)
  qsg_jax.QSGS2AUC(length_scale=1.0, lam=1e-3, labeled_weight=0.5).fit(x64, semi)  # scaled first


def test_labeled_rows_that_are_one_point_are_refused():
  """Ten rows of each class at one x: DSG returned rounding noise (scores spread 3e-8, ranked
  at 0.26), the direct solver a tie with advice to lower lam."""
  x = np.full((20, 3), 0.5)
  y = np.repeat([0, 1], 10)
  xu = np.random.default_rng(0).random((50, 3))
  for solver, steps in (("dsg", {"num_steps": 16}), ("direct", {})):
    with pytest.raises(ValueError, match=r"x_labeled: every row is the same point \(\[0\.5, 0\.5"):
      qsg_jax.fit(x, y, xu, solver=solver, **steps)
    with pytest.raises(ValueError, match=r"x_labeled: every row is the same point"):
      qsg_jax.cross_validate(x, y, xu, quick=True, num_folds=2, solver=solver, **steps)
  with pytest.raises(ValueError, match="X's labeled rows: every row is the same point"):
    qsg_jax.QSGS2AUC().fit(np.concatenate([x, xu]), np.concatenate([y, np.full(50, -1)]))


def test_a_column_in_other_units_than_the_rest_is_said():
  """A column in [0, 0.01] beside [0, 1] ones: the kernel barely saw it (ranked at 0.55 where
  scaled it gave 0.98), with no word (the unscaled-features warning looked at |x| > 10 only)."""
  x, y, xu = _small()
  x, xu = x.copy(), xu.copy()
  x[:, 1] *= 1e-3
  xu[:, 1] *= 1e-3
  for solver, steps in (("direct", {}), ("dsg", {"num_steps": 16})):
    with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning,
                      match=r"column\(s\) 1 span less than 0\.01 \(column 1: \[.*\]\)"):
      qsg_jax.fit(x, y, xu, solver=solver, **steps)


def test_rows_beyond_the_kernels_reach_are_said_at_scoring(tmp_path):
  """Rows far outside the training data (other units, a forgotten scaling) all scored about
  f = 0 (their order rounding noise), without a word. Every scoring door of a Nystrom model now
  warns for them (the bound is their distance to the landmarks' box; reference: the scores of
  those rows equal the scores of rows farther still, to float32 rounding) and stays silent
  inside."""
  x, y, xu = _small()
  far = x[:5] + 100.0
  result = qsg_jax.fit(x, y, xu, key=0, solver="direct")
  fit = direct.fit(x, y, xu, key=0)
  model = qsg_jax.QSGS2AUC(random_state=0).fit(np.concatenate([x, xu]),
                                               np.concatenate([y, np.full(40, -1)]))
  qsg_jax.io.save(result, str(tmp_path / "m"))
  loaded = qsg_jax.io.load(str(tmp_path / "m"))
  doors = {"qsg_jax.decision_function": lambda a: qsg_jax.decision_function(result, a),
           "qsg_jax.predict": lambda a: qsg_jax.predict(result, a),
           "direct.decision_function": lambda a: direct.decision_function(fit, a),
           "estimator": model.decision_function, "estimator.predict": model.predict,
           "io.load": loaded.decision_function}
  for name, door in doors.items():
    with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning,
                      match=r"5 of 5 rows of .* lie beyond the kernel's reach .* row 0, whose "
                            r"column \d is [\d.e+]+ where the landmarks span \["):
      scores = door(far)
    with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning):
      farther = door(far + 1e3)
    np.testing.assert_allclose(scores, farther, atol=1e-6, err_msg=name)
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      door(x)                                            # the training rows: nothing said
  with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning,   # the estimator: in X's units
                    match=r"column \d is 10\d\.?\d* where the landmarks span \[0\.\d+, "
                          r"0\.9\d+\]"):
    model.decision_function(far)


def test_far_rows_warn_at_every_kernel_models_scoring_door(tmp_path):
  """Nystrom models warned for rows beyond the kernel's reach; DSG's Fourier models (no
  landmarks), the exact baselines, SVOREX, the direct solver's Fourier map and the kernel
  ROC-SVMs scored them silently (reference: the exact kernel expansion scores them 0, which
  DSG's random features replace by their approximation error). Every door now warns, rows like
  the training data stay silent, and so does a cross-validation on the user's own rows."""
  rng = np.random.default_rng(1)
  x = rng.random((400, 3)).astype(np.float32)
  y = (x[:, 0] + x[:, 1] > 1.0).astype(np.int64)
  xl, yl, xu, test, y_test = x[:100], y[:100], x[100:200], x[200:], y[200:]
  result = qsg_jax.fit(xl, yl, xu, key=0, solver="dsg", num_steps=128)
  qsg_jax.io.save(result, str(tmp_path / "dsg"))
  model = qsg_jax.QSGS2AUC(solver="dsg", random_state=0, lam=1e-3, length_scale=1.0,
                          labeled_weight=0.5).fit(   # (no automatic choice: its doors are tested)
      np.concatenate([xl, xu]) * 10.0, np.concatenate([yl, np.full(100, -1)]))
  exact = baselines.fit_samult(xl, yl, xu, lam=1e-3, sigma=1.0, gamma=0.5)
  doors = {"qsg_jax.decision_function": lambda a: qsg_jax.decision_function(result, a),
           "qsg_jax.split_scores": lambda a: qsg_jax.split_scores(result, a),
           "io.load": qsg_jax.io.load(str(tmp_path / "dsg")).decision_function,
           "estimator": lambda a: model.decision_function(a * 10.0),
           "baselines": lambda a: baselines.decision_function(exact, a)}
  svorex = baselines.fit_svorex(xl, yl, sigma=1.0)
  fourier = direct.fit(xl, yl, xu, feature_map="rff", sigma=1.0, lam=1e-3, gamma=0.5)
  doors.update({"baselines.predict_svorex": lambda a: baselines.predict_svorex(svorex, a),
                "direct rff": lambda a: direct.decision_function(fourier, a)})
  for kernel, options in (("nystrom", {"num_landmarks": 50}), ("gaussian", {})):
    fitted = roc_svm.fit(xl, yl, kernel=kernel, sigma=1.0, max_steps=50, **options)
    doors[f"roc_svm {kernel}"] = lambda a, m=fitted.model: roc_svm.decision_function(m, a)
  for name, door in doors.items():
    with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning,
                      match=r"200 of 200 rows of .* beyond the kernel's reach"):
      door(test + 100.0)
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      door(test)                                        # rows like the training data: silent
  with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning,   # the estimator: in X's units
                    match=r"column \d is 10\d\d?\.?\d* where the training data span \[0\.\d+, "
                          r"9\.\d+\]\).*random Fourier features score them with their"):
    far = model.decision_function((test + 100.0) * 10.0)
  assert roc_auc_score(y_test, model.decision_function(test * 10.0)) > 0.9
  assert np.all(np.isfinite(far))
  ranker = roc_svm.ROCSVM(kernel="nystrom", num_landmarks=50).fit(xl * 10.0, yl)
  with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning,   # ROCSVM: in X's units too
                    match=r"rows of X .* is 10\d\d?\.?\d* where the landmarks span \[0\.\d+, 9\."):
    ranker.decision_function((test + 100.0) * 10.0)
  with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning,   # (a far value of 1e7 once zeroed
                    match=r"is 1e\+07 where the landmarks span \[0\.\d+, 9\."):   # the span)
    ranker.decision_function(np.full((1, 3), 1e7))
  with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning):   # what the warning is about
    assert np.all(baselines.decision_function(exact, test + 100.0) == 0.0)
  np.save(tmp_path / "xu.npy", xu * 8.0)   # unlabeled rows from a memory map, beyond the labeled
  mapped = direct.fit(xl, yl, np.load(tmp_path / "xu.npy", mmap_mode="r"), feature_map="rff",
                      sigma=1.0, lam=1e-3, gamma=0.5)      # rows' reach: in the training box
  with warnings.catch_warnings():
    warnings.simplefilter("error", qsg_jax.errors.UnscaledFeaturesWarning)
    direct.decision_function(mapped, xu * 8.0)
  with warnings.catch_warnings():   # a narrow kernel's validation folds: said by their AUC
    warnings.simplefilter("error", qsg_jax.errors.UnscaledFeaturesWarning)
    roc_svm.cross_validate(x[:100] * 10.0, yl, [{"sigma": 1e3}], num_folds=2, kernel="nystrom",
                           num_landmarks=20, max_steps=20)
