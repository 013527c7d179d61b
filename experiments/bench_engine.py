r"""Engine benchmarks, each measured side by side in one run (issue: speed and scale).

  QSG_JAX_DATA=../shared/data python -m experiments.bench_engine
  JAX_PLATFORMS=cuda python -m experiments.bench_engine        # on a GPU

Prints and writes (results/bench_engine/bench_engine.{json,md}):
  1. engine vs the literal Algorithm 1 (qsg_jax.reference) on an ordinal (sgemm, k = 5) and a
     binary dataset at T in --steps, both drawing one mini-batch per class and one unlabeled
     mini-batch per step (identical samples), with the max coefficient difference;
  2. engine throughput in feature evaluations per second against the ceiling of one large fused
     GEMM + cos/sin on the same device (fraction of ceiling), measured right before the engine
     runs: once with jnp.cos/jnp.sin (the issue's ceiling) and once with the engine's own
     ``features.cos_sin``, which shares one range reduction between the two and is ~2.8x faster
     on CPU, so the engine's fraction of the first ceiling can exceed 1;
  3. time per iteration as the number of unlabeled points grows (best of --scaling_rounds rounds
     that visit every size in turn, so a burst of load on a shared machine hits all sizes alike).
A feature evaluation is one (point, frequency) pair: one multiply-add row of the GEMM plus one
cos and one sin.
"""

import time

from absl import app
from absl import flags
import jax
import jax.numpy as jnp

from qsg_jax import data as data_lib
from qsg_jax import defaults
from qsg_jax import engine
from qsg_jax.engine import features
from qsg_jax.engine import reference
from experiments import protocols
from experiments import reporting

_ORDINAL = flags.DEFINE_string("dataset", "sgemm", "Ordinal (or regression) dataset.")
_BINARY = flags.DEFINE_string("binary_dataset", "ijcnn1", "Binary dataset.")
_DATA_DIR = flags.DEFINE_string("data_dir", None, "Data directory (default $QSG_JAX_DATA).")
_STEPS = flags.DEFINE_list("steps", ["256", "1024"], "Iteration counts T to compare.")
_BATCH = flags.DEFINE_integer("batch", 64, "Mini-batch size per class and for unlabeled data.")
_FREQ = flags.DEFINE_integer("num_frequencies", 32, "Frequencies per block.")
_SCALING_STEPS = flags.DEFINE_integer("scaling_steps", 512, "T of the n_u scaling benchmark.")
_CEILING_POINTS = flags.DEFINE_integer("ceiling_points", 16384,
                                       "Points of the fused-ceiling GEMM (x 2048 features).")
_SCALING_ROUNDS = flags.DEFINE_integer("scaling_rounds", 3, "Rounds of the n_u scaling run.")
_THROUGHPUT_STEPS = flags.DEFINE_integer("throughput_steps", 1024, "T of the throughput run.")
_SKIP_REFERENCE = flags.DEFINE_bool("skip_reference", False, "Skip the slow literal runs.")
_OUTPUT_DIR = flags.DEFINE_string("output_dir", "results/bench_engine", "Output directory.")

HYPER = dict(sigma=defaults.SIGMA, lam=defaults.LAM, gamma=defaults.GAMMA,
             step_size=defaults.STEP_SIZE_MAX)


def _timed(fn, *args):
  """Seconds of the second call (the first compiles), and its result."""
  jax.block_until_ready(fn(*args))
  start = time.perf_counter()
  out = jax.block_until_ready(fn(*args))
  return time.perf_counter() - start, out


def feature_evaluations(config: engine.EngineConfig, num_labeled):
  """(point, frequency) pairs the engine evaluates in a run of ``config``."""
  c, b, m = config.chunk_size, config.unlabeled_batch_size, config.num_frequencies
  chunks = config.num_steps // c
  earlier = sum(c * b * (j * c) * m for j in range(chunks))   # chunk points x earlier blocks
  within = config.num_steps * c * b * m                        # chunk points x each new block
  labeled = config.num_steps * num_labeled * m                 # labeled points x each new block
  return earlier + within + labeled


def fused_ceiling(num_points=16384, num_features=2048, dim=14, cos_sin=None, tile=1024):
  """Feature evaluations per second of a large jitted GEMM + cos/sin on this device.

  The best of two forms: one [num_points, num_features] product with elementwise cos/sin outputs,
  and the same product in cache-sized tiles of ``tile`` points, each consumed by a matrix-vector
  product (what scoring does). On CPU the first is bound by writing its outputs to memory, the
  second by arithmetic; taking the faster keeps the ceiling a ceiling.

  With ``cos_sin=None`` the cosine and sine are ``jnp.cos`` and ``jnp.sin`` (the ceiling the
  issue and SPEC.md define); pass ``features.cos_sin`` for the ceiling of the engine's own shared
  range reduction.
  """
  kx, kw = jax.random.split(jax.random.key(0))
  x = jax.random.uniform(kx, (num_points, dim))
  omega = jax.random.normal(kw, (num_features, dim))
  weights = jnp.full((num_features,), 1.0 / num_features)
  if cos_sin is None:
    cos_sin = lambda z: (jnp.cos(z), jnp.sin(z))
  tile = min(tile, num_points)

  def elementwise(x, w):
    return cos_sin(x @ w.T)

  def tiled(x, w):
    def one_tile(x_tile):
      cos, sin = cos_sin(x_tile @ w.T)
      return cos @ weights + sin @ weights
    return jax.lax.map(one_tile, x[:num_points // tile * tile].reshape(-1, tile, dim))

  best = min(_timed(jax.jit(fn), x, omega)[0] for fn in (elementwise, tiled) for _ in range(3))
  return num_points * num_features / best


def ceilings():
  """(jnp.cos/jnp.sin ceiling, features.cos_sin ceiling), measured back to back."""
  n = _CEILING_POINTS.value
  return fused_ceiling(n), fused_ceiling(n, cos_sin=features.cos_sin)


def _trial_data(name, seed=0):
  dataset = data_lib.load(name, data_dir=_DATA_DIR.value)
  proto = protocols.protocol_for(dataset)
  trial = protocols.make_trial(dataset, proto, seed)
  data = engine.TrainData(jnp.asarray(trial.x_labeled), jnp.asarray(trial.y_labeled, jnp.int32),
                          jnp.asarray(trial.x_unlabeled))
  return dataset.name, proto.num_classes, data


def _hyper(k):
  return engine.Hyperparams(jnp.float32(HYPER["sigma"]), jnp.float32(HYPER["lam"]),
                            jnp.full(k - 1, HYPER["gamma"], jnp.float32),
                            jnp.float32(HYPER["step_size"]))


def engine_vs_reference(name, k, data, steps):
  """Row comparing engine and literal reference on identical samples."""
  config = engine.make_config(k, steps, num_frequencies=_FREQ.value,
                                labeled_batch_size=_BATCH.value,
                                unlabeled_batch_size=_BATCH.value)
  hyper = _hyper(k)
  key = jax.random.key(0)
  state = engine.init(key, data, config)
  run = lambda s: engine.train(s, data, hyper, config, config.num_steps)
  t_engine, (final, _) = _timed(run, state)
  row = {"dataset": name, "k": k, "T": steps, "m": config.num_frequencies,
         "batch": _BATCH.value, "engine_s": t_engine}
  if not _SKIP_REFERENCE.value:
    start = time.perf_counter()
    compiled = reference.reference_fit.lower(key, data, hyper, config=config).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    alphas = jax.block_until_ready(compiled(key, data, hyper))
    t_ref = time.perf_counter() - start
    # The engine runs again right after the reference; its time is the mean of the runs just
    # before and just after, so a change of machine load during the comparison hits both sides.
    start = time.perf_counter()
    jax.block_until_ready(run(state))
    t_engine = 0.5 * (t_engine + time.perf_counter() - start)
    diff = float(jnp.max(jnp.abs(final.scale * final.coef - alphas)))
    row.update(engine_s=t_engine, reference_s=t_ref, speedup=t_ref / t_engine,
               max_coef_diff=diff, max_coef=float(jnp.max(jnp.abs(alphas))),
               reference_compile_s=compile_s)
  return row


def throughput(name, k, data):
  """Engine throughput with the default protocol configuration (all labeled points, B = 128).

  Both ceilings are measured right before the engine runs, so they share its machine load.
  """
  params = protocols.DEFAULT_HYPERPARAMS
  config = engine.make_config(k, _THROUGHPUT_STEPS.value,
                                num_frequencies=params["num_frequencies"],
                                unlabeled_batch_size=params["unlabeled_batch_size"])
  hyper = _hyper(k)
  state = engine.init(jax.random.key(0), data, config)
  ceiling, own_ceiling = ceilings()
  seconds, (final, _) = _timed(lambda s: engine.train(s, data, hyper, config, config.num_steps),
                               state)
  evals = feature_evaluations(config, data.x_labeled.shape[0])
  model = engine.model_of(final, hyper)
  x_eval = data.x_unlabeled[:20000]
  predict_s, _ = _timed(lambda x: engine.model_scores(model, x), x_eval)
  predict_evals = x_eval.shape[0] * config.num_steps * config.num_frequencies
  return {"dataset": name, "T": config.num_steps, "m": config.num_frequencies,
          "B": config.unlabeled_batch_size, "train_s": seconds,
          "train_evals_per_s": evals / seconds,
          "train_fraction_of_ceiling": evals / seconds / ceiling,
          "train_fraction_of_own_ceiling": evals / seconds / own_ceiling,
          "predict_20k_s": predict_s, "predict_evals_per_s": predict_evals / predict_s,
          "predict_fraction_of_ceiling": predict_evals / predict_s / ceiling,
          "predict_fraction_of_own_ceiling": predict_evals / predict_s / own_ceiling,
          "ceiling_evals_per_s": ceiling, "own_ceiling_evals_per_s": own_ceiling}


def scaling(name, k, data, steps):
  """Time per iteration for growing unlabeled sets (the papers: it does not grow)."""
  n_full = data.x_unlabeled.shape[0]
  sizes = [n for n in (1_000, 10_000, 100_000) if n < n_full] + [n_full]
  config = engine.make_config(k, steps, num_frequencies=_FREQ.value,
                                unlabeled_batch_size=protocols.DEFAULT_HYPERPARAMS[
                                    "unlabeled_batch_size"])
  hyper = _hyper(k)
  runs = []
  for n in sizes:
    sub = data._replace(x_unlabeled=data.x_unlabeled[:n])
    state = engine.init(jax.random.key(0), sub, config)
    run = lambda s, sub=sub: engine.train(s, sub, hyper, config, config.num_steps)
    jax.block_until_ready(run(state))                                    # compile
    runs.append((n, run, state))
  best = {n: float("inf") for n in sizes}
  for _ in range(_SCALING_ROUNDS.value):
    for n, run, state in runs:
      start = time.perf_counter()
      jax.block_until_ready(run(state))
      best[n] = min(best[n], time.perf_counter() - start)
  rows = [{"dataset": name, "num_unlabeled": n, "T": steps,
           "ms_per_iteration": 1e3 * best[n] / steps} for n in sizes]
  base = rows[0]["ms_per_iteration"]
  for r in rows:
    r["ratio_to_smallest"] = r["ms_per_iteration"] / base
  return rows


def main(argv):
  del argv
  reporting.check_writable(_OUTPUT_DIR.value)
  device = jax.devices()[0]
  print(f"device: {device.device_kind} ({jax.default_backend()}), {jax.device_count()} device(s)")
  ceiling, own_ceiling = ceilings()
  print(f"fused GEMM + cos/sin ceiling: {ceiling:.3g} feature evaluations/s with jnp.cos/jnp.sin, "
        f"{own_ceiling:.3g} with features.cos_sin (one shared range reduction)")
  ordinal = _trial_data(_ORDINAL.value)
  binary = _trial_data(_BINARY.value)
  comparison = []
  for name, k, data in (ordinal, binary):
    for steps in map(int, _STEPS.value):
      row = engine_vs_reference(name, k, data, steps)
      comparison.append(row)
      print(reporting.markdown_table([row]), flush=True)
  rate = [throughput(*ordinal)]
  print(reporting.markdown_table(rate), flush=True)
  scale = scaling(*ordinal, _SCALING_STEPS.value)
  print(reporting.markdown_table(scale), flush=True)
  payload = {"device": str(device.device_kind), "backend": jax.default_backend(),
             "comparison": comparison, "throughput": rate, "scaling": scale}
  sections = [("Engine vs literal Algorithm 1 (identical samples)", comparison, None),
              ("Throughput (default protocol configuration)", rate, None),
              ("Time per iteration vs unlabeled set size", scale, None)]
  paths = reporting.write_report(
      _OUTPUT_DIR.value, "bench_engine", payload, sections,
      title=f"Engine benchmark on {device.device_kind} ({jax.default_backend()})")
  print(f"wrote {paths['json']} and {paths['md']}")


if __name__ == "__main__":
  app.run(main)
