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

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import baselines
from qsg_jax import data as data_lib
from qsg_jax import engine
from experiments import reporting

_NUM_CLASSES = flags.DEFINE_integer("num_classes", 3, "k (2 = QSG-S2AUC).")
_NUM_LABELED = flags.DEFINE_integer("num_labeled", 60, "Labeled points.")
_NUM_UNLABELED = flags.DEFINE_integer("num_unlabeled", 200, "Unlabeled points.")
_SIGMA = flags.DEFINE_float("sigma", 1.0, "Kernel parameter.")
_LAM = flags.DEFINE_float("lam", 0.5, "Regularization lambda.")
_THETA = flags.DEFINE_float("theta", 3.0, "Step eta_t = theta / t; theta * lam must be in (1, 2).")
_GAMMA = flags.DEFINE_float("gamma", 0.5, "Trade-off gamma.")
_MAX_STEPS = flags.DEFINE_integer("max_steps", 8192, "Largest t.")
_SEEDS = flags.DEFINE_integer("seeds", 8, "Independent runs averaged.")
_UNLABELED_BATCH = flags.DEFINE_integer("unlabeled_batch_size", 8, "Unlabeled points per step.")
_FREQ = flags.DEFINE_integer("num_frequencies", 4, "Frequencies per block.")
_FIT_FROM = flags.DEFINE_integer("fit_from", 256, "Smallest t used in the slope fit.")
_OUTPUT_DIR = flags.DEFINE_string("output_dir", "results/convergence", "Output directory.")


def checkpoints(max_steps, chunk):
  """Log-spaced multiples of ``chunk`` up to max_steps."""
  raw = np.unique(np.round(np.geomspace(chunk, max_steps, 24) / chunk).astype(int)) * chunk
  return [int(t) for t in raw]


def run(seed, data, hyper, config, marks, x_all):
  """|f_t - f*|^2 (mean over training points) at every checkpoint for one seed."""
  state = engine.init(jax.random.key(seed), data, config)
  f_at = []
  done = 0
  for t in marks:
    state, _ = engine.train(state, data, hyper, config, t - done)
    done = t
    model = engine.model_of(state, hyper)
    f_at.append(engine.model_scores(model, x_all, block_group=config.block_group))
  return jnp.stack(f_at)


def main(argv):
  del argv
  k = _NUM_CLASSES.value
  if not 1.0 < _THETA.value * _LAM.value < 2.0:
    raise ValueError(f"theta * lam = {_THETA.value * _LAM.value:g}; Theorem 1 needs it in (1, 2).")
  reporting.check_writable(_OUTPUT_DIR.value)
  n = _NUM_LABELED.value + _NUM_UNLABELED.value
  if k > 2:
    ds = data_lib.make_synthetic_ordinal(0, num_points=n, num_test=0, num_features=4,
                                         num_classes=k)
  else:
    ds = data_lib.make_synthetic_binary(0, num_points=n, num_test=0, num_features=4)
  y = np.asarray(ds.y, np.int64)
  split = data_lib.split_semisupervised(0, y, _NUM_LABELED.value)
  lo, scale = data_lib.minmax_fit(ds.x)
  x = data_lib.minmax_apply(ds.x, lo, scale).astype(np.float32)
  x_l, y_l, x_u = x[split.labeled], y[split.labeled], x[split.unlabeled]
  exact = baselines.fit_exact_qsg(x_l, y_l, x_u, lam=_LAM.value, sigma=_SIGMA.value,
                                  gamma=_GAMMA.value, num_classes=k)
  f_star = jnp.asarray(baselines.decision_function(exact, np.concatenate([x_l, x_u])))
  theta = _THETA.value
  config = engine.make_config(
      k, _MAX_STEPS.value, chunk_size=64, block_group=16, num_frequencies=_FREQ.value,
      unlabeled_batch_size=_UNLABELED_BATCH.value, cache_unlabeled=True,
      schedule=lambda step: theta / (step + 1.0))
  hyper = engine.Hyperparams(jnp.float32(_SIGMA.value), jnp.float32(_LAM.value),
                             jnp.full(k - 1, _GAMMA.value, jnp.float32))
  data = engine.TrainData(jnp.asarray(x_l), jnp.asarray(y_l, jnp.int32), jnp.asarray(x_u))
  x_all = jnp.concatenate([data.x_labeled, data.x_unlabeled])
  marks = checkpoints(_MAX_STEPS.value, config.chunk_size)
  errors = []
  for seed in range(_SEEDS.value):
    f_t = run(seed, data, hyper, config, marks, x_all)
    errors.append(np.asarray(jnp.mean(jnp.square(f_t - f_star[None, :]), axis=1)))
    print(f"seed {seed}: |f_T - f*|^2 = {errors[-1][-1]:.3g}", flush=True)
  mean_err = np.mean(errors, axis=0)
  use = np.asarray(marks) >= _FIT_FROM.value
  slope, intercept = np.polyfit(np.log(np.asarray(marks)[use]), np.log(mean_err[use]), 1)
  ok = -1.3 <= slope <= -0.7
  print(f"fitted log-log slope of mean |f_t(x) - f*(x)|^2 over t in [{_FIT_FROM.value}, "
        f"{_MAX_STEPS.value}]: {slope:.3f} (Theorem 1: -1; check [-1.3, -0.7]: "
        f"{'pass' if ok else 'FAIL'})")
  rows = [{"t": t, "mean_sq_error": float(e)} for t, e in zip(marks, mean_err)]
  payload = {"slope": slope, "intercept": intercept, "theta": theta, "lam": _LAM.value,
             "theta_lam": theta * _LAM.value, "num_classes": k, "seeds": _SEEDS.value,
             "f_star_mean_abs": float(jnp.mean(jnp.abs(f_star))), "rows": rows,
             "check_in_range": bool(ok)}
  reporting.write_results(_OUTPUT_DIR.value, "convergence", payload, rows=rows,
                          title=f"|f_t - f*|^2, k={k}, slope {slope:.3f} (Theorem 1: -1)")
  plt = reporting.pyplot()
  fig, ax = plt.subplots(figsize=(5, 4))
  ax.loglog(marks, mean_err, "o-", label="mean over seeds and points")
  ax.loglog(marks, np.exp(intercept) * np.asarray(marks, float) ** slope, "--",
            label=f"fit: slope {slope:.2f}")
  ax.loglog(marks, mean_err[0] * marks[0] / np.asarray(marks, float), ":", label="1/t")
  ax.set_xlabel("iteration t")
  ax.set_ylabel("|f_t(x) - f*(x)|^2")
  ax.set_title(f"QS3ORAO convergence (k={k}, theta lam={theta * _LAM.value:g})")
  ax.legend()
  fig.tight_layout()
  reporting.save_figure(fig, f"{_OUTPUT_DIR.value}/convergence.png")
  print(f"wrote {_OUTPUT_DIR.value}/convergence.{{json,md,csv,png}}")


if __name__ == "__main__":
  app.run(main)
