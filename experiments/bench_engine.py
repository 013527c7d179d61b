r"""Engine benchmarks, each measured side by side in one run (speed and scale).

  QSG_JAX_DATA=../shared/data python -m experiments.bench_engine
  JAX_PLATFORMS=cuda python -m experiments.bench_engine        # on a GPU

Prints and writes (--output_dir/bench_engine.{json,md}):
  1. engine vs the literal Algorithm 1 (qsg_jax.reference) on an ordinal (sgemm, k = 5) and a
     binary dataset at T in --steps, both drawing one mini-batch per class and one unlabeled
     mini-batch per step (identical samples), with the max coefficient difference;
  2. engine throughput in feature evaluations per second against the ceiling of one large fused
     GEMM + cos/sin on the same device (fraction of ceiling), measured right before the engine
     runs: once with jnp.cos/jnp.sin (the ceiling SPEC.md defines) and once with the engine's own
     ``features.cos_sin``, which shares one range reduction between the two and is ~2.8x faster
     on CPU, so the engine's fraction of the first ceiling can exceed 1;
  3. time per iteration as the number of unlabeled points grows (best of --scaling_rounds rounds
     that visit every size in turn, so a burst of load on a shared machine hits all sizes alike).
A feature evaluation is one (point, frequency) pair: one multiply-add row of the GEMM plus one
cos and one sin.
"""

import dataclasses
import time
from typing import Optional

import jax
import jax.numpy as jnp

from qsg_jax import config as fit_config
from qsg_jax import data as data_lib
from qsg_jax import engine
from qsg_jax.engine import features
from qsg_jax.engine import reference
from experiments.common import cli
from experiments.common import protocols
from experiments.common import reporting
from experiments.common import store as store_lib

HYPER = dict(sigma=cli.ENGINE_DEFAULTS["sigma"], lam=cli.ENGINE_DEFAULTS["lam"],
             gamma=cli.ENGINE_DEFAULTS["gamma"], step_size=fit_config.STEP_SIZE_MAX)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The benchmark's settings (one flag each)."""
  dataset: str = cli.setting("sgemm", "Ordinal (or regression) dataset.", nonempty=True)
  binary_dataset: str = cli.setting("ijcnn1", "Binary dataset.", nonempty=True)
  data_dir: Optional[str] = None
  output_dir: str = "results/bench_engine"
  steps: tuple[int, ...] = cli.setting((256, 1024), "Iteration counts T to compare.", lower=1)
  batch: int = cli.setting(64, "Mini-batch size per class and for unlabeled data.", lower=1)
  num_frequencies: int = cli.setting(32, "Frequencies per block.", lower=1)
  scaling_steps: int = cli.setting(512, "T of the n_u scaling benchmark.", lower=1)
  ceiling_points: int = cli.setting(16384, "Points of the fused-ceiling GEMM (x 2048 "
                                    "features).", lower=1)
  scaling_rounds: int = cli.setting(3, "Rounds of the n_u scaling run.", lower=1)
  throughput_steps: int = cli.setting(1024, "T of the throughput run.", lower=1)
  skip_reference: bool = cli.setting(False, "Skip the slow literal runs.")


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

  With ``cos_sin=None`` the cosine and sine are ``jnp.cos`` and ``jnp.sin`` (the ceiling
  SPEC.md defines); pass ``features.cos_sin`` for the ceiling of the engine's own shared
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


def ceilings(num_points):
  """(jnp.cos/jnp.sin ceiling, features.cos_sin ceiling), measured back to back."""
  return fused_ceiling(num_points), fused_ceiling(num_points, cos_sin=features.cos_sin)


def _trial_data(name, data_dir, seed=0):
  dataset = data_lib.load(name, data_dir=data_dir)
  proto = protocols.protocol_for(dataset)
  trial = protocols.make_trial(dataset, proto, seed)
  data = engine.TrainData(jnp.asarray(trial.x_labeled), jnp.asarray(trial.y_labeled, jnp.int32),
                          jnp.asarray(trial.x_unlabeled))
  return dataset.name, proto.num_classes, data


def _hyper(k):
  return engine.Hyperparams(jnp.float32(HYPER["sigma"]), jnp.float32(HYPER["lam"]),
                            jnp.full(k - 1, HYPER["gamma"], jnp.float32),
                            jnp.float32(HYPER["step_size"]))


def engine_vs_reference(name, k, data, steps, settings):
  """Row comparing engine and literal reference on identical samples."""
  config = engine.make_config(k, steps, num_frequencies=settings.num_frequencies,
                              labeled_batch_size=settings.batch,
                              unlabeled_batch_size=settings.batch)
  hyper = _hyper(k)
  key = jax.random.key(0)
  state = engine.init(key, data, config)
  run = lambda s: engine.train(s, data, hyper, config, config.num_steps)
  t_engine, (final, _) = _timed(run, state)
  row = {"dataset": name, "k": k, "T": steps, "m": config.num_frequencies,
         "batch": settings.batch, "engine_s": t_engine}
  if not settings.skip_reference:
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


def throughput(name, k, data, settings):
  """Engine throughput with the default protocol configuration (all labeled points, B = 128).

  Both ceilings are measured right before the engine runs, so they share its machine load.
  """
  params = cli.ENGINE_DEFAULTS
  config = engine.make_config(k, settings.throughput_steps,
                              num_frequencies=params["num_frequencies"],
                              unlabeled_batch_size=params["unlabeled_batch_size"])
  hyper = _hyper(k)
  state = engine.init(jax.random.key(0), data, config)
  ceiling, own_ceiling = ceilings(settings.ceiling_points)
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


def scaling(name, k, data, steps, settings):
  """Time per iteration for growing unlabeled sets (the papers: it does not grow)."""
  n_full = data.x_unlabeled.shape[0]
  sizes = [n for n in (1_000, 10_000, 100_000) if n < n_full] + [n_full]
  config = engine.make_config(k, steps, num_frequencies=settings.num_frequencies,
                              unlabeled_batch_size=cli.ENGINE_DEFAULTS["unlabeled_batch_size"])
  hyper = _hyper(k)
  runs = []
  for n in sizes:
    sub = data._replace(x_unlabeled=data.x_unlabeled[:n])
    state = engine.init(jax.random.key(0), sub, config)
    run = lambda s, sub=sub: engine.train(s, sub, hyper, config, config.num_steps)
    jax.block_until_ready(run(state))                                    # compile
    runs.append((n, run, state))
  best = {n: float("inf") for n in sizes}
  for _ in range(settings.scaling_rounds):
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


def run(settings: Settings, log=cli.log_line):
  """Runs the three benchmarks; writes bench_engine.{json,md}; returns the payload."""
  store = store_lib.RunStore(settings.output_dir, "bench_engine")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  device = jax.devices()[0]
  log(f"device: {device.device_kind} ({jax.default_backend()}), {jax.device_count()} device(s)")
  ceiling, own_ceiling = ceilings(settings.ceiling_points)
  log(f"fused GEMM + cos/sin ceiling: {ceiling:.3g} feature evaluations/s with jnp.cos/jnp.sin, "
      f"{own_ceiling:.3g} with features.cos_sin (one shared range reduction)")
  ordinal = _trial_data(settings.dataset, settings.data_dir)
  binary = _trial_data(settings.binary_dataset, settings.data_dir)
  comparison = []
  for name, k, data in (ordinal, binary):
    for steps in settings.steps:
      comparison.append(engine_vs_reference(name, k, data, steps, settings))
      log(reporting.markdown_table([comparison[-1]]))
  rate = [throughput(*ordinal, settings)]
  log(reporting.markdown_table(rate))
  scale = scaling(*ordinal, settings.scaling_steps, settings)
  log(reporting.markdown_table(scale))
  payload = {"device": str(device.device_kind), "backend": jax.default_backend(),
             "comparison": comparison, "throughput": rate, "scaling": scale}
  sections = [("Engine vs literal Algorithm 1 (identical samples)", comparison, None),
              ("Throughput (default protocol configuration)", rate, None),
              ("Time per iteration vs unlabeled set size", scale, None)]
  paths = store.finish(payload, sections, title=f"Engine benchmark on {device.device_kind} "
                       f"({jax.default_backend()})")
  log(f"wrote {paths['json']} and {paths['md']}")
  return payload


if __name__ == "__main__":
  cli.script(Settings, run)
