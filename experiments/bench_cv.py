r"""Time of the papers' 539-point x 5-fold CV: grouped by sigma against per-task batching.

  QSG_JAX_DATA=../shared/data nice python -m experiments.bench_cv
  QSG_JAX_DATA=../shared/data nice python -m experiments.bench_cv --datasets=sgemm \
      --old_points=14

For each dataset (sgemm: k = 5, 500 labels; ijcnn1: binary, 200 labels; both with
--num_unlabeled unlabeled points of one trial) it runs, in one process:
  1. ``model_selection.cross_validate(method="grouped")`` on the whole paper grid (7 lam x
     7 sigma x 11 gamma, 5 folds = 2,695 tasks), timed end to end (compilation included);
  2. the former per-task batching (``method="per_task"``) on the first --old_points grid points
     of one sigma (all their folds), timed after a warm-up call, extrapolated linearly to the
     whole grid;
  3. the grouped path on that same subset, and the largest difference of the fold scores
     between the two (they must agree to float32 rounding; on data with many duplicate points,
     such as the embedded lev, rounding breaks exact score ties differently in the two paths and
     the AUCs can differ by a few 1e-3).
The machine may be shared: run with ``nice`` and read the numbers as upper bounds. Writes
bench_cv.{json,md} into --output_dir.
"""

import dataclasses
import time
from typing import Optional

import numpy as np

from qsg_jax import data as data_lib
from qsg_jax import model_selection
from experiments.common import cli
from experiments.common import protocols
from experiments.common import store as store_lib


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The benchmark's settings (one flag each)."""
  datasets: tuple[str, ...] = ("sgemm", "ijcnn1")
  data_dir: Optional[str] = None
  output_dir: str = "results/bench_cv"
  num_unlabeled: int = cli.setting(1000, "Unlabeled points of the CV.", lower=1)
  num_steps: int = cli.setting(1024, "T of every task.", lower=1)
  old_points: int = cli.setting(8, "Grid points timed with the per-task path.", lower=1)
  skip_full: bool = cli.setting(False, "Skip the full grouped grid (smoke runs).")


def cv_data(name, num_unlabeled, data_dir=None, seed=0):
  """(x_l, y_l, x_u) of trial ``seed`` of ``name`` with ``num_unlabeled`` unlabeled points."""
  dataset = data_lib.load(name, data_dir=data_dir)
  proto = protocols.protocol_for(dataset)
  trial = protocols.make_trial(dataset, proto, seed, eval_size=1)
  pick = np.random.default_rng(seed).choice(trial.x_unlabeled.shape[0],
                                            min(num_unlabeled, trial.x_unlabeled.shape[0]),
                                            replace=False)
  return trial.x_labeled, trial.y_labeled, trial.x_unlabeled[pick]


def _timed(fn):
  start = time.perf_counter()
  out = fn()
  return out, time.perf_counter() - start


def bench_dataset(name, num_unlabeled, num_steps, old_points, skip_full=False, data_dir=None):
  """Times of both paths on one dataset: a dict of seconds and the score difference."""
  x_l, y_l, x_u = cv_data(name, num_unlabeled, data_dir)
  grid = model_selection.paper_grid()
  num_points = int(np.prod([v.size for v in grid.values()]))
  run = lambda method, g, **kw: model_selection.cross_validate(
      x_l, y_l, x_u, grid=g, num_steps=num_steps, method=method, **kw)
  # A subset: the first lam, the first sigma, the first old_points gammas (all folds).
  subset = dict(grid, lam=grid["lam"][:1], sigma=grid["sigma"][:1],
                gamma=grid["gamma"][:old_points])
  tiny = dict(subset, gamma=subset["gamma"][:1])
  run("per_task", tiny)                                      # warm-up: compile the old path
  old, old_s = _timed(lambda: run("per_task", subset))
  new_subset, new_subset_s = _timed(lambda: run("grouped", subset))
  diff = float(np.nanmax(np.abs(old.fold_scores - new_subset.fold_scores)))
  row = {"dataset": name, "n_l": x_l.shape[0], "n_u": x_u.shape[0], "k": int(y_l.max()) + 1,
         "old_points": subset["gamma"].size, "old_s": old_s,
         "old_full_est_s": old_s * num_points / subset["gamma"].size,
         "new_subset_s": new_subset_s, "max_score_diff": diff}
  if not skip_full:
    full, full_s = _timed(lambda: run("grouped", grid))
    row.update(new_full_s=full_s, best=full.best, best_score=full.best_score)
  return row


def run(settings: Settings, log=cli.log_line):
  """Times both paths on every dataset; writes bench_cv.{json,md}; returns the rows."""
  store = store_lib.RunStore(settings.output_dir, "bench_cv")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  rows = []
  for name in settings.datasets:
    row = store.cached(name, lambda name=name: bench_dataset(
        name, settings.num_unlabeled, settings.num_steps, settings.old_points,
        settings.skip_full, settings.data_dir))
    rows.append(row)
    log(f"{name}: n_l={row['n_l']} n_u={row['n_u']} k={row['k']} T={settings.num_steps}")
    log(f"  per-task (old): {row['old_s']:.1f} s for {row['old_points']} points x 5 folds "
        f"-> {row['old_full_est_s'] / 60:.1f} min estimated for 539 x 5")
    log(f"  grouped (new) on the same subset: {row['new_subset_s']:.1f} s "
        f"(compilation included); max |fold score diff| = {row['max_score_diff']:.2e}")
    if "new_full_s" in row:
      log(f"  grouped (new), full 539 x 5 grid: {row['new_full_s'] / 60:.2f} min "
          f"({row['old_full_est_s'] / row['new_full_s']:.1f}x faster); best {row['best']} "
          f"AUC {row['best_score']:.4f}")
  store.finish({"rows": rows}, [(None, rows, None)],
               title="The paper-grid CV: grouped vs per-task")
  return rows


if __name__ == "__main__":
  cli.script(Settings, run)
