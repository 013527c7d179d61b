r"""Convergence of QS3ORAO / QSG-S2AUC: |f_t(x) - f*(x)|^2 against t (Theorem 1: O(1/t)).

  python -m experiments.convergence                 # ~1 minute
  python -m experiments.convergence --num_classes=2 --max_steps=16384

On a small synthetic problem the minimizer f* of the regularized objective (Eq. 9 with the squared
loss) is computed exactly by ``qsg_jax.baselines.fit_exact_qsg``: by the representer theorem
f* = sum_i beta_i k(x_i, .) over the training points, and since the risk is quadratic in the
scores, beta solves one linear system (its test checks ``jax.grad`` of the engine's risk vanishes).
The engine then runs with eta_t = theta / t, theta lam in (1, 2) (the theorem's schedule), for
several seeds; the mean over seeds and training points of |f_t(x) - f*(x)|^2 at log-spaced t gets
a least-squares log-log slope, which Theorem 1 puts at -1. Writes convergence.{json,md,csv,png}.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import baselines
from qsg_jax import data as data_lib
from qsg_jax import engine
from experiments.common import cli
from experiments.common import reporting
from experiments.common import store as store_lib


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The convergence run's settings (one flag each)."""
  output_dir: str = "results/convergence"
  num_classes: int = cli.setting(3, "k (2 = QSG-S2AUC).", lower=2)
  num_labeled: int = cli.setting(60, "Labeled points.", lower=2)
  num_unlabeled: int = cli.setting(200, "Unlabeled points.", lower=1)
  sigma: float = cli.setting(1.0, "Kernel parameter.", positive=True)
  lam: float = cli.setting(0.5, "Regularization lambda.", positive=True)
  theta: float = cli.setting(3.0, "Step eta_t = theta / t; theta * lam must be in (1, 2).",
                             positive=True)
  gamma: float = cli.setting(0.5, "Trade-off gamma.", lower=0.0, upper=1.0)
  max_steps: int = cli.setting(8192, "Largest t.", lower=64)
  seeds: int = cli.setting(8, "Independent runs averaged.", lower=1)
  unlabeled_batch_size: int = cli.setting(8, "Unlabeled points per step.", lower=1)
  num_frequencies: int = cli.setting(4, "Frequencies per block.", lower=1)
  fit_from: int = cli.setting(256, "Smallest t used in the slope fit.", lower=1)

  def __post_init__(self):
    super().__post_init__()
    if not 1.0 < self.theta * self.lam < 2.0:
      raise cli.UserError(f"theta * lam = {self.theta * self.lam:g}; Theorem 1 needs it in "
                          "(1, 2): change --theta or --lam.")
    marks = checkpoints(self.max_steps, CHUNK)
    if sum(t >= self.fit_from for t in marks) < 2:   # checked before any run store is started
      lower = f"lower --fit_from to at most {marks[-2]} or " if len(marks) > 1 else ""
      raise cli.UserError(f"--fit_from={self.fit_from} leaves fewer than 2 of the checkpoints "
                          f"{marks[:3]}{'...' if len(marks) > 3 else ''} (up to --max_steps="
                          f"{self.max_steps}) for the slope fit: {lower}raise --max_steps to at "
                          f"least {max(2 * CHUNK, 2 * self.fit_from)}.")


CHUNK = 64   # steps per jitted chunk: the checkpoints are its multiples


def checkpoints(max_steps, chunk):
  """Log-spaced multiples of ``chunk`` up to max_steps."""
  raw = np.unique(np.round(np.geomspace(chunk, max_steps, 24) / chunk).astype(int)) * chunk
  return [int(t) for t in raw]


def errors_over_time(seed, data, hyper, config, marks, x_all, f_star):
  """Mean over training points of |f_t - f*|^2 at every checkpoint, for one seed."""
  state = engine.init(jax.random.key(seed), data, config)
  errors, done = [], 0
  for t in marks:
    state, _ = engine.train(state, data, hyper, config, t - done)
    done = t
    f_t = engine.model_scores(engine.model_of(state, hyper), x_all,
                              block_group=config.block_group)
    errors.append(float(jnp.mean(jnp.square(f_t - f_star))))
  return np.asarray(errors)


def problem(settings):
  """(engine data, exact minimizer's scores on every training point) of the synthetic problem."""
  k, n = settings.num_classes, settings.num_labeled + settings.num_unlabeled
  make = data_lib.make_synthetic_ordinal if k > 2 else data_lib.make_synthetic_binary
  ds = make(0, num_points=n, num_test=0, num_features=4, **({"num_classes": k} if k > 2 else {}))
  y = np.asarray(ds.y, np.int64)
  split = data_lib.split_semisupervised(0, y, settings.num_labeled)
  lo, scale = data_lib.minmax_fit(ds.x)
  x = data_lib.minmax_apply(ds.x, lo, scale).astype(np.float32)
  x_l, y_l, x_u = x[split.labeled], y[split.labeled], x[split.unlabeled]
  exact = baselines.fit_exact_qsg(x_l, y_l, x_u, lam=settings.lam, sigma=settings.sigma,
                                  gamma=settings.gamma, num_classes=k)
  f_star = baselines.decision_function(exact, np.concatenate([x_l, x_u]))
  data = engine.TrainData(jnp.asarray(x_l), jnp.asarray(y_l, jnp.int32), jnp.asarray(x_u))
  return data, jnp.asarray(f_star)


def run(settings: Settings, log=cli.log_line):
  """Measures the slope; writes convergence.{json,md,csv,png}; returns the payload."""
  store = store_lib.RunStore(settings.output_dir, "convergence")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  k, theta = settings.num_classes, settings.theta
  data, f_star = problem(settings)
  config = engine.make_config(
      k, settings.max_steps, chunk_size=CHUNK, block_group=16,
      num_frequencies=settings.num_frequencies,
      unlabeled_batch_size=settings.unlabeled_batch_size, cache_unlabeled=True,
      schedule=lambda step: theta / (step + 1.0))
  hyper = engine.Hyperparams(jnp.float32(settings.sigma), jnp.float32(settings.lam),
                             jnp.full(k - 1, settings.gamma, jnp.float32))
  x_all = jnp.concatenate([data.x_labeled, data.x_unlabeled])
  marks = checkpoints(settings.max_steps, config.chunk_size)
  errors = []
  for seed in range(settings.seeds):
    errors.append(store.cached(f"seed_{seed}", lambda seed=seed: errors_over_time(
        seed, data, hyper, config, marks, x_all, f_star)))
    log(f"seed {seed}: |f_T - f*|^2 = {errors[-1][-1]:.3g}")
  mean_err = np.mean(errors, axis=0)
  use = np.asarray(marks) >= settings.fit_from
  slope, intercept = np.polyfit(np.log(np.asarray(marks)[use]), np.log(mean_err[use]), 1)
  ok = -1.3 <= slope <= -0.7
  log(f"fitted log-log slope of mean |f_t(x) - f*(x)|^2 over t in [{settings.fit_from}, "
      f"{settings.max_steps}]: {slope:.3f} (Theorem 1: -1; within [-1.3, -0.7]: "
      f"{'yes' if ok else 'NO'})")
  rows = [{"t": t, "mean_sq_error": float(e)} for t, e in zip(marks, mean_err)]
  payload = {"slope": slope, "intercept": intercept, "theta_lam": theta * settings.lam,
             "f_star_mean_abs": float(jnp.mean(jnp.abs(f_star))), "rows": rows,
             "slope_in_range": bool(ok)}
  plt = reporting.pyplot()
  fig, ax = plt.subplots(figsize=(5, 4))
  ax.loglog(marks, mean_err, "o-", label="mean over seeds and points")
  ax.loglog(marks, np.exp(intercept) * np.asarray(marks, float) ** slope, "--",
            label=f"fit: slope {slope:.2f}")
  ax.loglog(marks, mean_err[0] * marks[0] / np.asarray(marks, float), ":", label="1/t")
  ax.set_xlabel("iteration t")
  ax.set_ylabel("|f_t(x) - f*(x)|^2")
  ax.set_title(f"QS3ORAO convergence (k={k}, theta lam={theta * settings.lam:g})")
  ax.legend()
  fig.tight_layout()
  reporting.save_figure(fig, store.dir / "convergence.png")
  store.finish(payload, [(None, rows, None)],
               title=f"|f_t - f*|^2, k={k}, slope {slope:.3f} (Theorem 1: -1)")
  log(f"wrote {store.dir}/convergence.{{json,md,csv,png}}")
  return payload


if __name__ == "__main__":
  cli.script(Settings, run)
