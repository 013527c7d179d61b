"""One process of a multi-process run, launched by ``tests/test_multiprocess.py`` (not a test).

  python tests/_multiprocess_worker.py MODE DATA_DIR OUT_DIR NUM_PROCESSES PROCESS_ID PORT

The launcher sets XLA_FLAGS (devices per process) and JAX_PLATFORMS=cpu. MODE:
  train:  trains QS3ORAO (k=3, unlabeled set read per host from DATA_DIR/x_u.npy, engine API)
          and QSG-S2AUC (k=2, ``qsg_jax.fit(mesh=...)``) on a mesh over every device of every
          process, scores DATA_DIR/x_test.npy sharded the same way, and writes the full
          coefficient and score arrays this process holds to OUT_DIR/p{PROCESS_ID}.npz.
  memory: reads its strata of DATA_DIR/x_u.npy, trains a few steps, and writes peak resident
          memory (ru_maxrss, bytes) before and after loading to OUT_DIR/p{PROCESS_ID}.npz.
"""

import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pylint: disable=g-import-not-at-top,wrong-import-position
import jax
import jax.numpy as jnp
import numpy as np

import qsg_jax
from qsg_jax import distributed
from qsg_jax import engine

STEPS = 32


def _peak_rss_bytes():
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # Linux reports KiB


def _config(k, num_shards, cache_unlabeled):
  return engine.EngineConfig(num_classes=k, num_steps=STEPS, num_frequencies=6,
                             unlabeled_batch_size=16, chunk_size=8, block_group=4,
                             num_shards=num_shards, cache_unlabeled=cache_unlabeled)


def _hyper(k):
  return engine.Hyperparams(jnp.float32(0.5), jnp.float32(0.01), jnp.full(k - 1, 0.5),
                            jnp.float32(1.0))


def train(data_dir, mesh):
  """Both models on ``mesh``; returns the arrays to compare (replicated: read in full here)."""
  labeled = np.load(os.path.join(data_dir, "labeled.npz"))
  x_test = np.load(os.path.join(data_dir, "x_test.npy"))
  devices = mesh.shape["data"]
  results = {}
  # QS3ORAO, k = 3, engine API, unlabeled strata read per host.
  unlabeled = distributed.load_unlabeled(os.path.join(data_dir, "x_u.npy"), mesh)
  data = engine.TrainData(jnp.asarray(labeled["x"]), jnp.asarray(labeled["y3"]), unlabeled.x)
  config = _config(3, devices, cache_unlabeled=False)
  state = engine.init(jax.random.key(7), data, config, num_unlabeled=unlabeled.num_unlabeled)
  state, _ = engine.train_sharded(state, data, _hyper(3), config, STEPS, mesh)
  results["k3_coef"] = np.asarray(state.coef * state.scale)
  results["k3_f_labeled"] = np.asarray(state.f_labeled)
  results["k3_scores"] = np.asarray(
      engine.model_scores_sharded(engine.model_of(state, _hyper(3)), x_test, mesh, block_group=4))
  # QSG-S2AUC, k = 2, the checked high-level API with the whole (replicated) unlabeled set.
  x_u = np.load(os.path.join(data_dir, "x_u.npy"))
  fit = qsg_jax.fit(labeled["x"], labeled["y2"], x_u, key=3, num_steps=STEPS, num_frequencies=4,
                    unlabeled_batch_size=8, chunk_size=8, cache_unlabeled=False, mesh=mesh)
  results["k2_coef"] = np.asarray(fit.model.coef * fit.model.scale)
  results["k2_scores"] = qsg_jax.decision_function(fit, x_test, mesh=mesh)
  results["k2_thresholds"] = np.asarray(fit.thresholds)
  return results


def memory(data_dir, mesh):
  """Peak resident memory before and after loading this process's strata and training."""
  labeled = np.load(os.path.join(data_dir, "labeled.npz"))
  jax.block_until_ready(jnp.ones(4) + 1)
  before = _peak_rss_bytes()
  unlabeled = distributed.load_unlabeled(os.path.join(data_dir, "x_u.npy"), mesh)
  loaded = _peak_rss_bytes()
  data = engine.TrainData(jnp.asarray(labeled["x"]), jnp.asarray(labeled["y2"]), unlabeled.x)
  config = _config(2, mesh.shape["data"], False).replace(num_steps=8)
  state = engine.init(jax.random.key(0), data, config, num_unlabeled=unlabeled.num_unlabeled)
  state, _ = engine.train_sharded(state, data, _hyper(2), config, 8, mesh)
  coef = np.asarray(state.coef)
  local_rows = sum(s.data.shape[0] for s in unlabeled.x.addressable_shards)
  return {"before": before, "loaded": loaded, "after": _peak_rss_bytes(),
          "local_rows": local_rows, "global_rows": unlabeled.x.shape[0],
          "finite": np.isfinite(coef).all()}


def main(argv):
  mode, data_dir, out_dir = argv[1:4]
  num_processes, process_id, port = map(int, argv[4:7])
  if num_processes > 1:
    distributed.initialize(f"127.0.0.1:{port}", num_processes, process_id)
  mesh = distributed.global_mesh()
  results = (train if mode == "train" else memory)(data_dir, mesh)
  results["process_index"] = jax.process_index()
  results["device_count"] = jax.device_count()
  np.savez(os.path.join(out_dir, f"p{process_id}.npz"), **results)


if __name__ == "__main__":
  main(sys.argv)
