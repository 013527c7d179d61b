"""Cross-validation of the baselines (batched against a loop of fits) and the SVOREX wrapper."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from skordinal.datasets import load_lev

from qsg_jax import baselines
from qsg_jax.baselines import kernel_expansion
from tests import _bad_inputs as toy
from tests.conftest import raises_short


def _ordinal(n=200, k=3, d=2, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.random((n, d)).astype(np.float32)
  latent = np.sin(3 * x[:, 0]) + x[:, 1] ** 2 + 0.2 * rng.normal(size=n)
  return x, np.digitize(latent, np.quantile(latent, np.linspace(0, 1, k + 1)[1:-1]))


def _lev(num_labeled=150, seed=0):
  data = load_lev()
  x = data.data.astype(np.float32)
  y = data.target.astype(np.int64) - int(data.target.min())
  lo, hi = x.min(0), x.max(0)
  x = (x - lo) / np.maximum(hi - lo, 1e-12)
  order = np.random.default_rng(seed).permutation(y.size)
  return x[order[:num_labeled]], y[order[:num_labeled]], x[order[num_labeled:]], \
      y[order[num_labeled:]]


# The shapes of test_spectral_cv_equals_the_float64_lu_path's problem (45 labeled and 75 unlabeled
# points, 2 lam x 3 gamma x 3 folds = 18 tasks per sigma): the float64 programs of the LU path
# compile once for the tests that share them (one per method, mode and batch).
def _spectral_problem():
  x, y = _ordinal(n=120, k=3, d=3, seed=2)
  return x[:45], y[:45], x[45:]


# A vmap batch of 4 tasks of n = 120 float64 points (k - 1 = 2 splits, 3 n x n matrices each):
# 18 tasks make 4 full batches and one padded batch.
_BATCH_4 = 4 * 2 * (kernel_expansion.MATRICES_PER_SOLVE - 1) * 120 * 120 * 8


def test_batched_cv_equals_a_loop_of_fits_on_each_fold():
  """Held-out points kept as zero-weight centers give exactly the fit without them; the PNU-AUC
  prior of each split is re-estimated on every training fold."""
  x_l, y_l, x_u = _spectral_problem()
  # eta != 0: every fit below keeps the unlabeled centers (one compiled solve for all of them).
  grid = {"lam": [0.25, 2.0], "sigma": [3.0], "gamma": [-0.5, 0.25, 0.5]}
  with jax.enable_x64(True):
    result = baselines.cross_validate("m_pnu_auc", x_l, y_l, x_u, grid=grid, num_folds=3,
                                      seed=1, dtype=jnp.float64)
    folds = baselines.stratified_folds(y_l, 3, seed=1)
    for (i, lam), (g, gamma), f in itertools.product(enumerate(grid["lam"]),
                                                     enumerate(grid["gamma"]), range(3)):
      model = baselines.fit_m_pnu_auc(x_l[folds != f], y_l[folds != f], x_u, lam=lam,
                                      sigma=3.0, gamma=gamma, dtype=jnp.float64)
      scores = baselines.decision_function(model, x_l[folds == f])
      expected = baselines.split_aucs(scores, y_l[folds == f], 3)
      np.testing.assert_allclose(result.fold_scores[i, 0, g, f], expected, atol=1e-12)
    vmapped = baselines.cross_validate("m_pnu_auc", x_l, y_l, x_u, grid=grid, num_folds=3,
                                       seed=1, dtype=jnp.float64, mode="vmap",
                                       batch_bytes=_BATCH_4)
    np.testing.assert_allclose(vmapped.fold_scores, result.fold_scores, atol=1e-12)
  assert result.scores.shape == (2, 1, 3, 2)
  np.testing.assert_allclose(result.scores, result.fold_scores.mean(axis=-2))
  # One setting per split, each the best for its own AUC.
  assert result.best["gamma"].shape == (2,)
  assert result.best_score == pytest.approx(result.scores.reshape(-1, 2).max(axis=0).mean())
  model = baselines.fit_m_pnu_auc(x_l, y_l, x_u, **result.best)
  assert baselines.decision_function(model, x_u).shape == (75, 2)


@pytest.mark.parametrize("method", ["samult", "pnu_auc", "m_samult", "m_pnu_auc"])
def test_spectral_cv_equals_the_float64_lu_path(method):
  """One eigendecomposition per sigma and (n_l + 3) Woodbury solves give the LU path's scores."""
  x_l, y_l, x_u = _spectral_problem()
  y_l = y_l if method.startswith("m_") else (y_l > 0).astype(np.int64)
  grid = {"lam": [0.125, 2.0], "sigma": [0.5, 4.0],
          "gamma": [-0.6, 0.0, 0.3] if "pnu" in method else [0.0, 0.4, 1.0]}
  with jax.enable_x64(True):
    lu = baselines.cross_validate(method, x_l, y_l, x_u, grid=grid, num_folds=3, seed=1,
                                  dtype=jnp.float64)
  spectral = baselines.cross_validate(method, x_l, y_l, x_u, grid=grid, num_folds=3, seed=1,
                                      mode="spectral")
  assert np.isfinite(spectral.fold_scores).all()
  np.testing.assert_allclose(spectral.fold_scores, lu.fold_scores, atol=1e-9)
  for name in lu.best:
    np.testing.assert_array_equal(spectral.best[name], lu.best[name])
  # No unlabeled points (supervised end only) takes the same path. Its float64 LU reference is
  # the run above at that gamma (in both grids): there the unlabeled points get zero
  # coefficients (test_gamma_endpoints_give_the_supervised_pn_solution), so no second program.
  end = 1 if "pnu" in method else 2
  supervised = dict(grid, gamma=[grid["gamma"][end]])
  assert supervised["gamma"] == [0.0 if "pnu" in method else 1.0]
  spectral = baselines.cross_validate(method, x_l, y_l, None, grid=supervised, num_folds=3,
                                      seed=1, mode="spectral")
  np.testing.assert_allclose(spectral.fold_scores, lu.fold_scores[:, :, end:end + 1], atol=1e-9)


def test_spectral_cv_scores_duplicate_points_as_ties():
  """Identical labeled points score alike (their mean score), whatever rounding does: a loop
  of float64 fits per fold, scores averaged over each group of duplicates, gives its AUCs."""
  x, y = _ordinal(n=40, k=3, d=2, seed=3)
  x_l = np.concatenate([x[:30], x[:30]])          # every labeled point twice
  y_l = np.concatenate([y[:30], y[:30]])
  x_u = x[30:]
  grid = {"lam": [0.5], "sigma": [2.0], "gamma": [0.5]}
  result = baselines.cross_validate("m_samult", x_l, y_l, x_u, grid=grid, num_folds=3, seed=0,
                                    mode="spectral")
  folds = baselines.stratified_folds(y_l, 3, seed=0, points=x_l)   # the copies share a fold
  with jax.enable_x64(True):
    for f in range(3):
      model = baselines.fit_m_samult(x_l[folds != f], y_l[folds != f], x_u, lam=0.5, sigma=2.0,
                                     gamma=0.5, dtype=jnp.float64)
      scores = baselines.decision_function(model, x_l)                # [60, 2]
      tied = (scores[:30] + scores[30:]) / 2
      tied = np.concatenate([tied, tied])[folds == f]
      np.testing.assert_allclose(result.fold_scores[0, 0, 0, f],
                                 baselines.split_aucs(tied, y_l[folds == f], 3), atol=1e-12)


def test_cv_picks_the_kernel_width_the_problem_obviously_needs():
  """Labels flip three times along x: a very wide kernel cannot rank them, a narrow one can."""
  rng = np.random.default_rng(0)
  x = rng.random((160, 1)).astype(np.float32)
  y = (np.sin(20 * x[:, 0]) > 0).astype(np.int64)
  grid = {"lam": [0.125, 1.0], "sigma": [0.01, 64.0], "gamma": [0.5, 1.0]}
  result = baselines.cross_validate("samult", x[:60], y[:60], x[60:], grid=grid, num_folds=3)
  assert result.best["sigma"] == 64.0 and isinstance(result.best["lam"], float)
  assert result.best_score == pytest.approx(np.max(result.scores))
  assert result.scores[:, 1].min() > result.scores[:, 0].max() + 0.2, result.scores[..., 0]
  shared = baselines.cross_validate("m_samult", x[:60], y[:60], x[60:], grid=grid, num_folds=3,
                                    per_split=False)
  assert shared.best["sigma"] == 64.0


def test_grids_and_folds_follow_the_papers():
  grid = baselines.paper_grid("samult")
  np.testing.assert_allclose(grid["lam"], 2.0 ** np.arange(-3, 4))
  np.testing.assert_allclose(grid["sigma"], 2.0 ** np.arange(-3, 4))
  np.testing.assert_allclose(grid["gamma"], np.linspace(0, 1, 11))
  np.testing.assert_allclose(baselines.paper_grid("m_pnu_auc")["gamma"], np.linspace(-1, 1, 21))
  assert set(baselines.paper_grid("svorex")) == {"c", "sigma"}
  assert all(v.size <= 3 for v in baselines.quick_grid("pnu_auc").values())
  labels = np.repeat([0, 1, 2], [10, 7, 5])
  folds = baselines.stratified_folds(labels, 5, seed=3)
  for c in range(3):
    per_fold = np.bincount(folds[labels == c], minlength=5)
    assert per_fold.min() >= 1 and per_fold.max() - per_fold.min() <= 1
  assert np.ptp(np.bincount(folds, minlength=5)) <= 1


def test_cv_refuses_bad_requests():
  x, y = _ordinal(n=60)
  x_l, y_l, x_u = x[:30], y[:30], x[30:]
  with pytest.raises(ValueError, match="unknown method 'samul'"):
    baselines.cross_validate("samul", x_l, y_l, x_u)
  with pytest.raises(ValueError, match=r"grid for m_samult must be a dict with the keys"):
    baselines.cross_validate("m_samult", x_l, y_l, x_u, grid={"lam": [1.0], "sigma": [1.0]})
  with pytest.raises(ValueError, match=r"grid\['gamma'\] must be .* in \[0, 1\]"):
    baselines.cross_validate("m_samult", x_l, y_l, x_u,
                             grid={"lam": [1.0], "sigma": [1.0], "gamma": [-0.5]})
  with pytest.raises(ValueError, match="num_folds must be >= 2 and at most the smallest"):
    baselines.cross_validate("m_samult", x_l, y_l, x_u, quick=True, num_folds=50)
  with pytest.raises(ValueError, match="mode must be 'map', 'vmap', 'spectral' or None"):
    baselines.cross_validate("m_samult", x_l, y_l, x_u, quick=True, num_folds=3, mode="pmap")
  with pytest.raises(ValueError, match="no unlabeled data but the gamma grid"):
    baselines.cross_validate("m_pnu_auc", x_l, y_l, None, quick=True, num_folds=3)
  with pytest.raises(ValueError, match="labels must lie in 0..1"):
    baselines.cross_validate("samult", x_l, y_l, x_u, quick=True, num_folds=3)
  # 3 distinct labeled points (each 10 times) and lam = 1e-45: every system is singular. The
  # shapes and method of test_cross_validate_with_a_seed_repeats_its_scores (one compilation).
  dup = np.repeat(toy.X_L_30[:3], 10, axis=0)
  with pytest.raises(ValueError, match="every grid point gave a NaN validation AUC"):
    baselines.cross_validate("samult", dup, toy.Y_30, toy.X_U_30, num_folds=3,
                             grid={"lam": [1e-45], "sigma": [1.0], "gamma": [1.0]})


def test_cv_refuses_grid_kernels_the_working_precision_cannot_compute():
  """As the fits do: a grid sigma whose kernel rounds to a constant, or points too far from the
  origin for their spread, are refused up front instead of scoring noise."""
  x, y = _ordinal(n=60)
  x_l, y_l, x_u = x[:30], y[:30], x[30:]
  grid = {"lam": [1.0], "sigma": [1.0, 1e-30], "gamma": [1.0]}
  raises_short(ValueError, r"sigma \* \(largest squared distance\) = .* below float32 resolution",
               baselines.cross_validate, "m_samult", x_l, y_l, x_u, grid=grid, num_folds=3)
  grid = {"lam": [1.0], "sigma": [1e9], "gamma": [1.0]}
  raises_short(ValueError, "lie far from the origin .* Min-max scale", baselines.cross_validate,
               "m_samult", 0.5 + 1e-5 * x_l, y_l, 0.5 + 1e-5 * x_u, grid=grid, num_folds=3)
  raises_short(ValueError, "every row is the same point", baselines.cross_validate, "m_pnu_auc",
               np.ones_like(x_l), y_l, np.ones_like(x_u), quick=True, num_folds=3)


@pytest.mark.parametrize("method,mode", [("samult", "map"), ("m_pnu_auc", "vmap"),
                                         ("m_samult", "spectral"), ("svorex", None)])
def test_cv_keeps_float64_points_when_float64_is_asked(method, mode, monkeypatch):
  """dtype=float64 (and SVOREX / the spectral path, which compute in float64) see the points
  exactly as passed, not rounded to float32 (1e-9 apart would become one point)."""
  from qsg_jax.baselines import cross_validation   # pylint: disable=g-import-not-at-top
  # 45 labeled and 75 unlabeled points, 2 lam x 3 gamma: the float64 LU programs of
  # test_spectral_cv_equals_the_float64_lu_path (map) and test_batched_cv_... (vmap batches of 4).
  rng = np.random.default_rng(0)
  x_l = 0.5 + 1e-5 * rng.random((45, 2))
  y_l = np.arange(45) % (2 if method == "samult" else 3)
  x_u = 0.5 + 1e-5 * rng.random((75, 2))
  seen = {}
  def spy(name, fn):
    def wrapped(*args, **kwargs):
      seen.setdefault(name, [a for a in args if isinstance(a, np.ndarray) and a.ndim == 2][:2])
      return fn(*args, **kwargs)
    monkeypatch.setattr(cross_validation, name, wrapped)
  spy("_kernel_fold_scores", cross_validation._kernel_fold_scores)  # pylint: disable=protected-access
  spy("_svorex_fold_scores", cross_validation._svorex_fold_scores)  # pylint: disable=protected-access
  monkeypatch.setattr(cross_validation._spectral_cv, "fold_scores",  # pylint: disable=protected-access
                      lambda fn, grid, xl, yl, xu, *a: seen.setdefault("spectral", [xl, xu]) and
                      np.full((1, 1, 1, a[1], 2), 0.5))
  grid = {"svorex": {"c": [1.0], "sigma": [1e9]},
          "m_samult": {"lam": [1.0], "sigma": [1e9], "gamma": [0.5]},   # scores stubbed above
          "samult": {"lam": [1.0, 2.0], "sigma": [1e9], "gamma": [0.0, 0.4, 1.0]},
          "m_pnu_auc": {"lam": [1.0, 2.0], "sigma": [1e9], "gamma": [-0.6, 0.0, 0.3]}}[method]
  with jax.enable_x64(True):
    baselines.cross_validate(method, x_l, y_l, x_u, grid=grid, num_folds=3, mode=mode,
                             dtype=jnp.float64, batch_bytes=_BATCH_4)
  (points,) = seen.values()
  assert points[0].dtype == np.float64
  np.testing.assert_array_equal(points[0], x_l)
  if method != "svorex":
    np.testing.assert_array_equal(points[1], x_u)


def test_svorex_kernel_is_exp_minus_sigma_squared_distance():
  x_l, y_l, x_t, _ = _lev(num_labeled=60)
  model = baselines.fit_svorex(x_l, y_l, c=2.0, sigma=0.7)
  alpha = np.asarray(model.estimator.model_["alpha"])
  d2 = ((x_t[:20, None, :].astype(np.float64) - x_l[None].astype(np.float64)) ** 2).sum(-1)
  np.testing.assert_allclose(baselines.decision_function(model, x_t[:20]),
                             np.exp(-0.7 * d2) @ alpha, rtol=1e-6, atol=1e-9)


def test_svorex_beats_chance_on_an_ordinal_dataset():
  x_l, y_l, x_t, y_t = _lev()
  result = baselines.cross_validate("svorex", x_l, y_l, quick=True, num_folds=2)
  assert set(result.best) == {"c", "sigma"} and result.scores.shape == (2, 2, 4)
  model = baselines.FIT_FUNCTIONS["svorex"](x_l, y_l, x_t, **result.best)
  scores = baselines.decision_function(model, x_t)
  assert scores.shape == y_t.shape
  assert baselines.mean_split_auc(scores, y_t, 5) > 0.8          # chance is 0.5
  classes = baselines.predict_svorex(model, x_t)
  assert np.mean(np.abs(classes - y_t)) < 0.7                       # always-mode MAE is 0.72
  with pytest.raises(ValueError, match="c must be finite and > 0"):
    baselines.fit_svorex(x_l, y_l, c=0.0)


# ---- Bad inputs (RELIABILITY.md) ----------------------------------------------------------------

@pytest.mark.parametrize("changes, error, pattern", [
    (dict(seed=None), TypeError, r"seed must be a whole number >= 0; received None"),
    (dict(seed=-1), ValueError, r"seed must be a whole number >= 0; received -1"),
    (dict(seed=1.5), TypeError, r"seed must be a whole number >= 0; received 1\.5"),
    (dict(num_folds=2.5), TypeError, r"num_folds must be a whole number >= 2; received 2\.5"),
    (dict(num_folds=None), TypeError, r"num_folds must be a whole number >= 2; received None"),
    (dict(batch_bytes=2.5), TypeError, r"batch_bytes must be a whole number >= 1; received 2\.5"),
    (dict(memory_fraction=1.5), ValueError, r"memory_fraction must be a number in \(0, 1\]"),
    (dict(memory_fraction=None), TypeError, r"memory_fraction must be a number in \(0, 1\]"),
    (dict(per_split="yes"), TypeError, r"per_split must be True or False"),
    (dict(quick=None), TypeError, r"quick must be True or False"),
])
def test_cross_validate_checks_arguments_before_any_kernel(changes, error, pattern):
  args = dict(grid=toy.GRID_30, num_folds=3)
  args.update(changes)
  raises_short(error, pattern, baselines.cross_validate, "samult", toy.X_L_30, toy.Y_30,
               toy.X_U_30, **args)


def test_cross_validate_with_a_seed_repeats_its_scores():
  args = ("samult", toy.X_L_30, toy.Y_30, toy.X_U_30)
  first = baselines.cross_validate(*args, grid=toy.GRID_30, num_folds=3, seed=1)
  again = baselines.cross_validate(*args, grid=toy.GRID_30, num_folds=3, seed=1)
  np.testing.assert_array_equal(first.fold_scores, again.fold_scores)
