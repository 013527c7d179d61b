"""One fit configuration: the hyper-parameters of QS3ORAO / QSG-S2AUC, their defaults and checks.

``qsg_jax.fit``, ``qsg_jax.model_selection.cross_validate``, the estimators and the experiments'
flags all read ``FitConfig``: a new hyper-parameter is one field here (with its default, a
one-line help text in ``metadata["help"]`` and its check in ``__post_init__``).

sigma, lam and gamma were found on SGEMM (500 labels, min-max scaled features): a starting point,
not a substitute for cross-validation (``qsg_jax.model_selection``). The step is "auto": eta0 =
min(STEP_SIZE_MAX, 1 / (lambda_max(K H) + lam)), half the stability limit of the squared-loss
scores' one-step map (``qsg_jax.engine.auto_step``).

    >>> FitConfig(num_steps=256).replace(sigma=1.0).sigma
    1.0
"""

import dataclasses
from typing import Callable, Optional, Tuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation

# Speed only (the coefficients never depend on them).
CHUNK_SIZE = 32             # steps whose samples are drawn up front.
BLOCK_GROUP = 8             # feature blocks per matrix product when scoring.
PREDICT_CHUNK = 4096        # points per matrix product when scoring.
NUM_SEGMENTS = 8            # jitted calls a DSG fit is split into (progress reports).
# Max |f| on the labeled points above which a run counts as diverged (converging runs of the
# squared loss, target margin 1, stay of order 1).
DIVERGENCE_THRESHOLD = 50.0
STEP_SIZE_MAX = 3.0         # cap of the "auto" step (the former default eta0).
# Solvers of ``qsg_jax.fit`` and ``cross_validate`` (``choose_solver``): "dsg" is the papers'
# Algorithm 1 (doubly stochastic gradients over random Fourier features); "direct" minimizes the
# squared-loss objective exactly in a Nystrom feature space (``qsg_jax.direct``); "auto" picks.
SOLVERS = ("dsg", "direct", "auto")
# The losses known by name (``qsg_jax.engine.losses.get_loss``; a test keeps the two equal).
LOSSES = ("squared", "hinge", "logistic")
# The ``FitConfig`` fields only DSG reads, and those only the direct solver reads.
DSG_FIELDS = ("step_size", "num_steps", "num_frequencies", "unlabeled_batch_size",
              "labeled_batch_size")
DIRECT_FIELDS = ("num_landmarks",)

_NUMBER = (int, float, np.integer, np.floating)


def _field(default, help_text):
  return dataclasses.field(default=default, metadata={"help": help_text})


@dataclasses.dataclass(frozen=True)
class FitConfig:
  """The hyper-parameters of a fit, checked when built (the message says how to fix a value)."""
  sigma: float = _field(0.1, "Gaussian kernel parameter, k(x, x') = exp(-sigma ||x - x'||^2).")
  lam: float = _field(1e-3, "Regularization lambda (>= 0).")
  gamma: Union[float, Tuple[float, ...]] = _field(
      0.5, "Trade-off in [0, 1] (one, or one per split): 1 = labeled pairs only, 0 = PU + NU "
      "risks only.")
  step_size: Union[str, float, Callable] = _field(
      "auto", "Initial step eta0 of eta_t = eta0 / (1 + eta0 lam t): a number, 'auto' (eta0 from "
      "the curvature of the squared-loss risk), or a schedule callable step -> eta.")
  num_steps: int = _field(1024, "Iterations T (= random feature blocks).")
  num_frequencies: int = _field(32, "Frequencies m per feature block (2m features).")
  unlabeled_batch_size: int = _field(128, "Unlabeled points per step.")
  labeled_batch_size: Optional[int] = _field(
      None, "Labeled points per class and step (None: every labeled point every step).")
  loss: str = _field("squared", "Pairwise loss: 'squared' (the papers'), 'hinge' or 'logistic'.")
  split_lam: Optional[float] = _field(
      None, "Penalty lam_g > 0 of per-split corrections g_j (split j ranks with f + g_j; inf "
      "freezes them at 0); None: plain QS3ORAO.")
  # The default stays "dsg": qsg_jax.fit and cross_validate are the papers' method, and the
  # reproduction experiments (experiments/*.py: run, unlabeled_value, timing_vs_unlabeled,
  # split_corrections, select_step, bench_cv, ...) and tests of DSG's internals (state, per-step
  # metrics, step size) call them with defaults; "auto" would silently turn them into direct
  # fits. The scikit-learn estimators default to "auto" (their users want the fastest exact
  # answer), and experiments.run takes --solver.
  solver: str = _field(
      "dsg", "'dsg' (the default: the papers' Algorithm 1, exactly), 'direct' (the squared loss "
      "minimized exactly over Nystrom features, qsg_jax.direct; far faster at the papers' "
      "sizes) or 'auto' (direct for the squared loss unless a DSG-only "
      "setting is given, else DSG; qsg_jax.config.choose_solver).")
  num_landmarks: Optional[int] = _field(
      None, "Nystrom landmarks p of the direct solver (None: 512, the measured choice of "
      "qsg_jax.direct; more where the kernel residual warns).")

  def __post_init__(self):
    set_ = lambda name, value: object.__setattr__(self, name, value)
    set_("sigma", validation.check_float32_range(   # beyond float32: inf deep inside
        "sigma", validation.check_positive("sigma", self.sigma),
        "the solvers compute in float32; min-max scaled features suit 0.1..10."))
    set_("lam", validation.check_float32_range(
        "lam", validation.check_positive("lam", self.lam, allow_zero=True),
        "the solvers compute in float32; a lam that large makes f = 0 anyway."))
    set_("gamma", validation.check_gamma(self.gamma))
    set_("step_size", check_step_size(self.step_size))
    for name in ("num_steps", "num_frequencies", "unlabeled_batch_size"):
      set_(name, validation.check_count(name, getattr(self, name)))
    set_("labeled_batch_size", validation.check_count(
        "labeled_batch_size", self.labeled_batch_size, allow_none=True,
        fix="None uses every labeled point every step."))
    if not isinstance(self.loss, str) and not hasattr(self.loss, "d1"):
      raise TypeError(f"loss must be one of {LOSSES} or a qsg_jax.engine.losses.PairwiseLoss; "
                      f"received {self.loss!r:.60}.")
    if isinstance(self.loss, str) and self.loss not in LOSSES:   # before any CV runs on it
      raise ValueError(f"unknown loss {self.loss!r:.60}; expected one of {LOSSES} (lower case) "
                       "or a qsg_jax.engine.losses.PairwiseLoss(name, value, d1, d2).")
    if self.split_lam is not None:   # inf freezes the corrections at 0
      set_("split_lam", validation.check_positive(
          "split_lam", self.split_lam, allow_inf=True,
          fix="None turns the per-split corrections off."))
    set_("num_landmarks", validation.check_count(
        "num_landmarks", self.num_landmarks, allow_none=True,
        fix="None uses the direct solver's measured default (512)."))
    if self.solver not in SOLVERS:
      raise ValueError(f"solver must be one of {SOLVERS}; received {self.solver!r:.60}. 'dsg' "
                       "runs the papers' Algorithm 1.")

  def replace(self, **changes) -> "FitConfig":
    """A copy with ``changes`` applied and checked; unknown names are refused with the list."""
    unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
    if unknown:
      raise TypeError(f"unknown hyper-parameter(s) {unknown}; FitConfig has "
                      f"{[f.name for f in dataclasses.fields(self)]}.")
    return dataclasses.replace(self, **changes)


def loss_name(config: FitConfig) -> str:
  """The name of ``config.loss`` ("squared", "hinge", "logistic", or a custom loss's name)."""
  return config.loss if isinstance(config.loss, str) else str(getattr(config.loss, "name", ""))


def changed_fields(config: FitConfig, names) -> list:
  """The fields among ``names`` whose value differs from their default (given by the user)."""
  defaults = {f.name: f.default for f in dataclasses.fields(FitConfig)}
  return [name for name in names
          if validation.set_away_from_default(getattr(config, name), defaults[name])]


def choose_solver(config: FitConfig, dsg_options=()) -> str:
  """The solver that runs ``config``: "dsg" or "direct" (``FitConfig.solver``).

  "auto" is "direct" for the squared loss, where the direct solution was at least as accurate
  as DSG's and far faster at the papers' sizes (``experiments/bench_direct.py``), and "dsg"
  for the other losses (no closed form) or when a DSG-only setting is given: a field of
  ``DSG_FIELDS`` different from its default, or a DSG-only option of the caller named in
  ``dsg_options`` (e.g. "num_segments" of ``qsg_jax.fit``), since it means something to DSG
  only.

  Example:
    >>> choose_solver(FitConfig(solver="auto")), choose_solver(FitConfig(solver="auto",
    ...                                                                  num_steps=256))
    ('direct', 'dsg')

  Raises:
    ValueError: "direct" with another loss or with DSG-only settings, or "dsg" with
      direct-only ones (``DIRECT_FIELDS``): they would have no effect.
  """
  dsg_given = changed_fields(config, DSG_FIELDS) + list(dsg_options)
  direct_given = changed_fields(config, DIRECT_FIELDS)
  squared = loss_name(config) == "squared"
  if config.solver == "auto":
    solver = "direct" if squared and not dsg_given else "dsg"
  else:
    solver = config.solver
  if solver == "direct" and not squared:
    raise ValueError(f"solver='direct' minimizes the squared pairwise loss in closed form; "
                     f"received loss={config.loss!r:.40}. Use solver='dsg' (or 'auto', which "
                     "picks DSG for other losses).")
  if solver == "direct" and dsg_given:
    raise ValueError(f"{dsg_given} only mean something to DSG (the papers' Algorithm 1), not to "
                     "solver='direct': leave them at their defaults, or use solver='dsg' (or "
                     "'auto', which then runs DSG).")
  if solver == "dsg" and direct_given:
    reasons = ([f"the {loss_name(config)} loss"] if not squared else []) + (
        [f"DSG-only settings {dsg_given}"] if dsg_given else [])
    why = f" ('auto' chose DSG: {' and '.join(reasons)})" if config.solver == "auto" else ""
    raise ValueError(f"{direct_given} only mean something to the direct solver, not to DSG{why}: "
                     "leave them unset, or use solver='direct' with the squared loss.")
  return solver


def check_step_size(step_size):
  """"auto", a float > 0, or a schedule callable that takes a traced int32 step and returns one
  number (checked by a trial trace), else a clear error."""
  if isinstance(step_size, str) and step_size == "auto":
    return step_size
  if callable(step_size):
    return check_schedule(step_size)
  if not isinstance(step_size, _NUMBER) and not (
      isinstance(step_size, (np.ndarray, jax.Array)) and np.ndim(step_size) == 0):
    raise TypeError(f"step_size must be a number (eta0 of eta0 / (1 + eta0 lam t)), a schedule "
                    f"callable step -> eta (optax schedules work) or 'auto'; received "
                    f"{step_size!r:.80}.")
  return validation.check_float32_range(
      "step_size", validation.check_positive("step_size", step_size),
      "DSG computes in float32; eta0 = 3 suits min-max scaled features ('auto' picks one).")


def check_schedule(schedule):
  """``schedule`` after a traced trial call (as the engine makes: an int32 step), so that a
  schedule that cannot take a step or returns something else than one number says so here."""
  try:
    out = jax.eval_shape(schedule, jax.ShapeDtypeStruct((), jnp.int32))
  except Exception as e:  # pylint: disable=broad-except  (any failure of user code)
    raise TypeError(f"step_size schedule {schedule!r:.60} must take the iteration t (a traced "
                    f"int32 scalar) and return the step size; calling it failed with "
                    f"{type(e).__name__}: {str(e)[:150]}") from e
  shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
  if shape != () or dtype is None or not (jnp.issubdtype(dtype, jnp.floating)
                                          or jnp.issubdtype(dtype, jnp.integer)):
    raise TypeError(f"step_size schedule {schedule!r:.60} must return one number per iteration; "
                    f"it returned {type(out).__name__} of shape {shape} and dtype {dtype}.")
  return schedule
