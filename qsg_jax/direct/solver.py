"""``qsg_jax.fit(..., solver="direct" | "auto")``: the direct solver behind the checked entry point.

``qsg_jax.config.SOLVER_FITS`` maps a solver name to a function with ``fit``'s signature that
returns a ``FitResult``; importing ``qsg_jax.direct`` registers two (``register``):

* "direct": ``direct.fit`` with the config's sigma, lam, gamma and split_lam (the squared loss
  only: other losses have no closed form), thresholds fitted on f of the labeled points like
  DSG's. DSG-only knobs (step_size, num_steps, batch sizes, chunking, progress segments) have no
  effect. ``result.metrics["solver"]`` is "direct"; ``result.state`` is None (there is no
  training state). A Fourier solution's ``result.config`` is a valid ``EngineConfig``, so every
  DSG path scores it unchanged; a Nystrom solution (the default) is a ``NystromModel`` that
  ``direct.decision_function`` / ``direct.split_scores`` score.
* "auto": "direct" for the squared loss, "dsg" (the papers' Algorithm 1) for the others. On the
  benchmark (``experiments/bench_direct.py``) the direct solution is at least as accurate as DSG's
  and far faster at the papers' sizes, so nothing argues for DSG where both apply.
"""

import numpy as np

from qsg_jax import config as config_lib
from qsg_jax import engine
from qsg_jax import thresholds as thresholds_lib
from qsg_jax import _validation as validation
from qsg_jax.direct import feature_maps
from qsg_jax.direct import fitting


def fit_result(x_labeled, y_labeled, x_unlabeled, *, config, key, num_classes=None,
               progress=None, mesh=None, axis_name="data", num_shards=None,
               cache_unlabeled=None, chunk_size=None, block_group=None, num_segments=None,
               threshold_surrogate="hinge", divergence_threshold=None):
  """``qsg_jax.fit`` by the direct solver (module docstring); returns its ``FitResult``."""
  del num_shards, cache_unlabeled, chunk_size, block_group, num_segments, divergence_threshold
  from qsg_jax import _fit   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  loss = config.loss if isinstance(config.loss, str) else getattr(config.loss, "name", "")
  if loss != "squared":
    raise ValueError(f"solver='direct' minimizes the squared pairwise loss in closed form; "
                     f"received loss={config.loss!r:.40}. Use solver='dsg' (or 'auto', which "
                     "picks DSG for other losses).")
  validation.check_callable("progress", progress)
  thresholds_lib.check_surrogate(threshold_surrogate)
  result = fitting.fit(x_labeled, y_labeled, x_unlabeled, key=key, num_classes=num_classes,
                       sigma=config.sigma, lam=config.lam, gamma=config.gamma,
                       split_lam=config.split_lam, mesh=mesh, axis_name=axis_name)
  k = result.moments.counts.shape[0] - 1
  y_l = np.asarray(y_labeled).astype(np.int32)
  b = thresholds_lib.fit_thresholds(result.f_labeled, y_l, k, threshold_surrogate)
  if isinstance(result.feature_map, feature_maps.FourierMap):
    t, m, _ = result.feature_map.omega.shape
    eng = engine.make_config(k, t, num_frequencies=m)
  else:
    eng = engine.EngineConfig(num_classes=k, num_steps=1, chunk_size=1, block_group=1)
  if progress is not None:
    progress({"step": 1, "num_steps": 1, "max_abs_score": float(np.abs(result.f_labeled).max())})
  metrics = {"solver": "direct", "num_features": feature_maps.num_features(result.feature_map)}
  return _fit.FitResult(result.model, b, None, metrics, eng,
                        feature_maps.input_dim(result.feature_map))


def auto_fit(x_labeled, y_labeled, x_unlabeled, *, config, key, **options):
  """"direct" for the squared loss, else DSG (``qsg_jax.fit`` with solver "dsg")."""
  loss = config.loss if isinstance(config.loss, str) else getattr(config.loss, "name", "")
  if loss == "squared":
    return fit_result(x_labeled, y_labeled, x_unlabeled, config=config, key=key, **options)
  from qsg_jax import _fit   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  return _fit.fit(x_labeled, y_labeled, x_unlabeled, config=config.replace(solver="dsg"),
                  key=key, **options)


def register() -> None:
  """Registers "direct" and "auto" in ``qsg_jax.config.SOLVER_FITS`` (done on import)."""
  config_lib.SOLVER_FITS["direct"] = fit_result
  config_lib.SOLVER_FITS["auto"] = auto_fit
