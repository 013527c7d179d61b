"""The direct solver's side of ``qsg_jax.fit(..., solver="direct" | "auto")``.

``qsg_jax.fit`` (a higher layer) decides which solver runs (``config.choose_solver``) and calls
``fit_result`` here for "direct": ``direct.fit`` with the config's sigma, lam, gamma, split_lam
and num_landmarks (the squared loss only: other losses have no closed form), and thresholds
fitted on f of the labeled points like DSG's. What it returns, ``SolverResult``, holds the
fields of a ``FitResult`` but the training state (there is none); ``qsg_jax.fit`` builds the
``FitResult`` from it. Its model is a ``fitting.NystromModel``, scored by ``scores`` (optionally
with the points split over a mesh, ``scores_sharded``).
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import config as config_lib
from qsg_jax import engine
from qsg_jax import thresholds as thresholds_lib
from qsg_jax.direct import feature_maps
from qsg_jax.direct import fitting
from qsg_jax.direct import moments
from qsg_jax.engine import kernels
from qsg_jax.engine import sharding as engine_sharding
from qsg_jax.numerics import HIGHEST


class SolverResult(NamedTuple):
  """A direct fit as ``qsg_jax.fit`` reports it (a ``FitResult`` without training state)."""
  model: fitting.Model          # NystromModel (or engine.Model for Fourier features).
  thresholds: jax.Array         # [k-1] ordered thresholds on f.
  metrics: dict                 # "solver": "direct", "num_features": p, "kernel_residual".
  config: engine.EngineConfig   # num_classes; block_group / predict_chunk of Fourier scoring.
  num_features: int             # d, checked at prediction time.


def fit_result(x_labeled, y_labeled, x_unlabeled, *, config: config_lib.FitConfig, key,
               num_classes=None, progress=None, mesh=None, axis_name="data",
               threshold_surrogate="hinge") -> SolverResult:
  """``direct.fit`` with ``config``'s hyper-parameters and the thresholds of its f.

  Args:
    x_labeled, y_labeled, x_unlabeled, key, num_classes, mesh, axis_name: as ``direct.fit``.
    config: ``FitConfig`` (sigma, lam, gamma, split_lam, num_landmarks; the squared loss).
    progress: optional callable(dict), called once when the solve is done (step 1 of 1).
    threshold_surrogate: as ``qsg_jax.fit``.

  Returns:
    ``SolverResult``.
  """
  if config_lib.loss_name(config) != "squared":
    raise ValueError(f"solver='direct' minimizes the squared pairwise loss in closed form; "
                     f"received loss={config.loss!r:.40}. Use solver='dsg' (or 'auto', which "
                     "picks DSG for other losses).")
  thresholds_lib.check_surrogate(threshold_surrogate)
  num_landmarks = config.num_landmarks or fitting.NUM_FEATURES
  result = fitting.fit(x_labeled, y_labeled, x_unlabeled, key=key, num_classes=num_classes,
                       sigma=config.sigma, lam=config.lam, gamma=config.gamma,
                       split_lam=config.split_lam, num_features=num_landmarks, mesh=mesh,
                       axis_name=axis_name)
  k = result.moments.counts.shape[0] - 1
  y_l = np.asarray(y_labeled).astype(np.int32)
  b = thresholds_lib.fit_thresholds(*jax.device_put((result.f_labeled, y_l)), k,
                                    threshold_surrogate)
  if isinstance(result.feature_map, feature_maps.FourierMap):
    t, m, _ = result.feature_map.omega.shape
    eng = engine.make_config(k, t, num_frequencies=m)
  else:
    eng = engine.EngineConfig(num_classes=k, num_steps=1, chunk_size=1, block_group=1)
  if progress is not None:
    progress({"step": 1, "num_steps": 1, "max_abs_score": float(np.abs(result.f_labeled).max())})
  metrics = {"solver": "direct", "num_features": feature_maps.num_features(result.feature_map),
             "kernel_residual": result.kernel_residual}
  return SolverResult(result.model, b, metrics, eng, feature_maps.input_dim(result.feature_map))


def scores(model: fitting.Model, x, split: bool = False) -> np.ndarray:
  """Unchecked [n] f(x) (``split``: [n, k-1] f + g_j) of a direct model, float32 x [n, d]."""
  return fitting.scores(model, np.asarray(x, np.float32), split=split)


def scores_sharded(model: fitting.NystromModel, x, mesh: jax.sharding.Mesh,
                   axis_name: str = "data") -> np.ndarray:
  """[n] f(x) of a Nystrom model with the points split over the devices of ``mesh`` axis
  ``axis_name`` (the landmarks replicated); the same numbers as ``scores`` to float rounding.

  ``x`` is the same [n, d] array on every process (as ``engine.model_scores_sharded``'s).
  """
  if axis_name not in mesh.shape:
    raise ValueError(f"mesh has no axis {axis_name!r}; its axes are {tuple(mesh.shape)}.")
  devices = int(mesh.shape[axis_name])
  n = x.shape[0]
  rows = devices * -(-min(max(n, 1), devices * moments.CHUNK_ROWS) // devices)  # per call
  spec = jax.sharding.PartitionSpec
  replicated = jax.sharding.NamedSharding(mesh, spec())
  landmarks, coef, sigma = jax.device_put((model.landmarks, model.coef, model.sigma), replicated)
  out = [np.zeros(0, np.float32)]
  for lo in range(0, n, rows):   # bounded memory: [rows / devices, p] kernel per device
    part = np.zeros((rows, x.shape[1]), np.float32)
    part[:min(rows, n - lo)] = x[lo:lo + rows]
    part = jax.device_put(part, jax.sharding.NamedSharding(mesh, spec(axis_name)))
    scores = _expansion_sharded(landmarks, coef, sigma, part, mesh, axis_name)
    out.append(np.asarray(engine_sharding.gathered(scores, rows, replicated)))
  return np.concatenate(out)[:n]


@functools.partial(jax.jit, static_argnames=("mesh", "axis_name"))
def _expansion_sharded(landmarks, coef, sigma, x, mesh, axis_name):
  spec = jax.sharding.PartitionSpec
  local = lambda z, c, s, xs: jnp.matmul(kernels.gaussian_kernel(xs, z, s), c,
                                         precision=HIGHEST)
  return jax.shard_map(local, mesh=mesh, in_specs=(spec(), spec(), spec(), spec(axis_name)),
                       out_specs=spec(axis_name), check_vma=False)(landmarks, coef, sigma, x)
