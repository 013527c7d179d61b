"""One process of a multi-process direct fit, launched by ``tests/test_direct.py`` (not a test).

  python tests/_direct_worker.py DATA_DIR OUT_DIR NUM_PROCESSES PROCESS_ID PORT

The launcher sets XLA_FLAGS (devices per process) and JAX_PLATFORMS=cpu. Each process reads
only its strata of DATA_DIR/x_u.npy (``distributed.load_unlabeled``), fits the direct solver on
the mesh of every device of every process (the statistics pass sums each device's stratum and
adds the devices with one psum), and writes the float64 solution and its scores f on every
unlabeled point to OUT_DIR/p{ID}.npz.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pylint: disable=g-import-not-at-top,wrong-import-position
import jax
import numpy as np

from qsg_jax import direct
from qsg_jax import distributed

# Shared with the test: the fits both sides run.
FITS = {"rff": dict(feature_map="rff", num_features=64, num_frequencies=8),
        "nystrom": dict(feature_map="nystrom", num_features=16)}
SETTING = dict(key=3, sigma=0.5, lam=0.05, gamma=[0.3, 0.8], chunk_rows=16)


def main(argv):
  data_dir, out_dir = argv[1:3]
  num_processes, process_id, port = map(int, argv[3:6])
  if num_processes > 1:
    distributed.initialize(f"127.0.0.1:{port}", num_processes, process_id)
  mesh = distributed.global_mesh()
  labeled = np.load(os.path.join(data_dir, "labeled.npz"))
  unlabeled = distributed.load_unlabeled(os.path.join(data_dir, "x_u.npy"), mesh)
  results = {"process_index": jax.process_index(), "device_count": jax.device_count()}
  for name, kwargs in FITS.items():
    fit = direct.fit(labeled["x"], labeled["y"], unlabeled, mesh=mesh, **SETTING, **kwargs)
    results[name] = direct.decision_function(fit.model, np.load(os.path.join(data_dir,
                                                                             "x_u.npy")))
    results[f"{name}_weights"] = fit.weights
    if name == "nystrom":   # scored on the mesh: 100 rows, a multiple of the devices (sweep X:
      x_even = np.load(os.path.join(data_dir, "x_u.npy"))[:100]   # unreadable on 2 processes)
      results["nystrom_mesh"] = direct.solver.scores_sharded(fit.model, x_even, mesh)
  # Sweep X: process 1 with other labeled rows (a split drawn per process) trained another
  # model than process 0 without a word; now both refuse, naming x_labeled.
  x_other = labeled["x"].copy()
  if jax.process_index() == 1:
    x_other[:3] = 1.0 - x_other[:3]
  try:
    direct.fit(x_other, labeled["y"], unlabeled, mesh=mesh, **SETTING, **FITS["nystrom"])
    results["mismatch"] = "no error"
  except ValueError as error:
    results["mismatch"] = str(error)
  np.savez(os.path.join(out_dir, f"p{process_id}.npz"), **results)


if __name__ == "__main__":
  main(sys.argv)
