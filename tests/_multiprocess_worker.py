"""One process of a multi-process run, launched by ``tests/test_multiprocess.py`` (not a test).

  python tests/_multiprocess_worker.py MODE DATA_DIR OUT_DIR NUM_PROCESSES PROCESS_ID PORT

The launcher sets XLA_FLAGS (devices per process) and JAX_PLATFORMS=cpu. MODE:
  train:  trains QS3ORAO (k=3, engine API; with several processes the unlabeled set is read
          per host from DATA_DIR/x_u.npy, with one it is laid out by engine.shard_unlabeled)
          and QSG-S2AUC (k=2, ``qsg_jax.fit(mesh=...)``) on a mesh over every device of every
          process, scores DATA_DIR/x_test.npy sharded the same way, and writes the full
          coefficient and score arrays this process holds to OUT_DIR/p{PROCESS_ID}.npz.
  memory: reads its strata of DATA_DIR/x_u.npy and trains a few steps twice (the first time
          compiles), resetting the peak resident memory in between (Linux
          /proc/self/clear_refs), and writes the resident memory before loading
          and the peak after loading and after training (bytes) to OUT_DIR/p{PROCESS_ID}.npz.
"""

import ctypes
import gc
import os
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


def _memory_status(field):
  """VmRSS (resident now) or VmHWM (peak resident since the last reset) in bytes (Linux)."""
  with open("/proc/self/status") as f:
    [line] = [line for line in f if line.startswith(field + ":")]
  return int(line.split()[1]) * 1024   # reported in kB


def _reset_peak():
  with open("/proc/self/clear_refs", "w") as f:
    f.write("5")   # VmHWM := VmRSS (Linux >= 4.0)


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
  x_u = np.load(os.path.join(data_dir, "x_u.npy"))
  if jax.process_count() > 1:
    unlabeled = distributed.load_unlabeled(os.path.join(data_dir, "x_u.npy"), mesh)
  else:   # the reference lays the whole set out itself, independently of load_unlabeled
    unlabeled = distributed.ShardedUnlabeled(engine.shard_unlabeled(x_u, devices), len(x_u))
  data = engine.TrainData(jnp.asarray(labeled["x"]), jnp.asarray(labeled["y3"]), unlabeled.x)
  config = _config(3, devices, cache_unlabeled=False)
  state = engine.init(jax.random.key(7), data, config, num_unlabeled=unlabeled.num_unlabeled)
  state, _ = engine.train_sharded(state, data, _hyper(3), config, STEPS, mesh)
  results["k3_coef"] = np.asarray(state.coef * state.scale)
  results["k3_f_labeled"] = np.asarray(state.f_labeled)
  results["k3_scores"] = np.asarray(
      engine.model_scores_sharded(engine.model_of(state, _hyper(3)), x_test, mesh, block_group=4))
  # QSG-S2AUC, k = 2, the checked high-level API with the whole (replicated) unlabeled set.
  fit = qsg_jax.fit(labeled["x"], labeled["y2"], x_u, key=3, num_steps=STEPS, num_frequencies=4,
                    unlabeled_batch_size=8, chunk_size=8, cache_unlabeled=False, mesh=mesh)
  results["k2_coef"] = np.asarray(fit.model.coef * fit.model.scale)
  results["k2_scores"] = qsg_jax.decision_function(fit, x_test, mesh=mesh)
  # Sweep X: 100 rows, a multiple of the devices (nothing padded, so nothing sliced): the
  # scores stayed split over the devices and a second process could not read them.
  results["k2_scores_even"] = qsg_jax.decision_function(fit, x_test[:100], mesh=mesh)
  results["k2_thresholds"] = np.asarray(fit.thresholds)
  return results


def memory(data_dir, mesh):
  """Resident memory before loading this process's strata, peak after loading and training.

  A first identical round compiles everything, so the measured round adds only data.
  """
  labeled = np.load(os.path.join(data_dir, "labeled.npz"))
  config = _config(2, mesh.shape["data"], False).replace(num_steps=8)

  def load_and_train():
    unlabeled = distributed.load_unlabeled(os.path.join(data_dir, "x_u.npy"), mesh)
    loaded = _memory_status("VmHWM")
    data = engine.TrainData(jnp.asarray(labeled["x"]), jnp.asarray(labeled["y2"]), unlabeled.x)
    state = engine.init(jax.random.key(0), data, config, num_unlabeled=unlabeled.num_unlabeled)
    state, _ = engine.train_sharded(state, data, _hyper(2), config, 8, mesh)
    return unlabeled, loaded, np.asarray(state.coef)

  load_and_train()   # results dropped here
  gc.collect()
  ctypes.CDLL("libc.so.6").malloc_trim(0)   # freed pages back to the OS: round 2 re-faults them
  _reset_peak()
  before = _memory_status("VmRSS")
  unlabeled, loaded, coef = load_and_train()
  local_rows = sum(s.data.shape[0] for s in unlabeled.x.addressable_shards)
  return {"before": before, "loaded": loaded, "after": _memory_status("VmHWM"),
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
