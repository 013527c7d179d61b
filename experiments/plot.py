r"""Redraws the main job's plots from its saved results, without retraining.

  python -m experiments.plot results/lev

Reads ``RESULTS_DIR/run.json`` (or, for a run that did not finish, its ``cells/run/*.json``) and
writes into the same directory:
  run_auc.png             the AUC of each ordinal split {y <= j} vs {y > j} (binary: the one
                          split) of every trial, as points, with the mean over trials;
  run_roc.png             the ROC curve of every trial's evaluation scores, one panel per split;
  run_max_abs_score.png   max |f| on the labeled points over the iterations, one line per trial
                          (the divergence check watches this; converging runs stay near 1-3).
"""

import json
import pathlib
import sys

import numpy as np

from experiments.common import reporting


def load_trials(results_dir):
  """(trial rows, whether the run is complete) of a results directory.

  Raises:
    FileNotFoundError: no run.json and no trial files (the message names the directory).
  """
  results_dir = pathlib.Path(results_dir)
  manifest = results_dir / "run.json"
  stored = json.loads(manifest.read_text()) if manifest.exists() else {}
  if stored.get("complete"):
    return stored["trials"], True
  rows = [json.loads(p.read_text())
          for p in sorted(results_dir.glob("cells/run/trial_*.json"))]
  if not rows:
    raise FileNotFoundError(f"{results_dir} holds no results of experiments.run (no run.json, "
                            "no cells/run/trial_*.json); pass the --output_dir of a run.")
  return rows, False


def _auc_figure(plt, rows, note):
  """AUC per split (x) and trial (a point each, jittered); a bar at each split's mean."""
  aucs = np.array([r["auc_per_split"] for r in rows], dtype=float)   # [trials, k-1]
  trials, splits = aucs.shape
  fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * splits + 2.5), 4))
  jitter = np.linspace(-0.25, 0.25, trials) if trials > 1 else np.zeros(1)
  for i, r in enumerate(rows):
    ax.plot(np.arange(splits) + jitter[i], aucs[i], "o", ms=5, alpha=0.75,
            label=f"trial {r['trial']}: {r['auc']:.4f}")
  means = np.nanmean(aucs, axis=0)
  ax.hlines(means, np.arange(splits) - 0.35, np.arange(splits) + 0.35, colors="k", lw=2,
            label="mean over trials")
  ax.set_xticks(range(splits), [f"y<={j} | y>{j}" for j in range(splits)] if splits > 1
                else ["AUC"])
  ax.set_xlim(-0.6, splits - 0.4)
  ax.set_xlabel("split" if splits > 1 else "")
  ax.set_ylabel("AUC on the evaluation points")
  ax.set_title(f"AUC per split and trial{note}")
  if trials <= 12:
    ax.legend(fontsize=7, loc="best")
  fig.tight_layout()
  return fig


def _roc_figure(plt, rows, note):
  """The ROC curves of every trial, one panel per split."""
  rocs = [np.asarray(r["roc"], dtype=float) for r in rows if "roc" in r]
  splits = rocs[0].shape[0]
  cols = min(splits, 4)
  nrows = -(-splits // cols)
  fig, axes = plt.subplots(nrows, cols, figsize=(3.3 * cols, 3.3 * nrows), squeeze=False)
  fpr = np.linspace(0.0, 1.0, rocs[0].shape[1])
  for j, ax in enumerate(axes.ravel()):
    if j >= splits:
      ax.axis("off")
      continue
    for curve in rocs:
      ax.plot(fpr, curve[j], lw=0.8, alpha=0.7)
    ax.plot([0, 1], [0, 1], "k:", lw=0.8)
    ax.set_title(f"y > {j} vs y <= {j}" if splits > 1 else "ROC", fontsize=9)
    ax.set_xlabel("false-positive rate")
    ax.set_ylabel("true-positive rate")
  fig.suptitle(f"ROC curves of the {len(rocs)} trials{note}")
  fig.tight_layout()
  return fig


def _max_abs_figure(plt, rows, note):
  fig, ax = plt.subplots(figsize=(6, 4))
  positive = False
  for r in rows:
    values = np.asarray(r["max_abs_score"], dtype=float)
    positive |= bool(np.any(values > 0))
    ax.plot(np.arange(1, values.size + 1), values, lw=0.8, label=f"trial {r['trial']}")
  ax.set_xscale("log")
  ax.set_yscale("log" if positive else "linear")   # every score 0 (a huge lam): no log scale
  ax.set_xlabel("iteration t")
  ax.set_ylabel("max |f| on the labeled points")
  ax.set_title(f"Score magnitude over training{note}")
  if len(rows) <= 12:
    ax.legend(fontsize=7)
  fig.tight_layout()
  return fig


def draw(results_dir):
  """Writes run_auc.png, run_roc.png and run_max_abs_score.png into ``results_dir``."""
  results_dir = pathlib.Path(results_dir)
  rows, complete = load_trials(results_dir)
  note = "" if complete else " (unfinished run)"
  plt = reporting.pyplot()
  figures = [("run_auc.png", _auc_figure), ("run_max_abs_score.png", _max_abs_figure)]
  if any("roc" in r for r in rows):
    figures.insert(1, ("run_roc.png", _roc_figure))
  return [reporting.save_figure(draw_figure(plt, rows, note), results_dir / name)
          for name, draw_figure in figures]


_USAGE = ("usage: python -m experiments.plot RESULTS_DIR\n  Redraws run_auc.png, run_roc.png and "
          "run_max_abs_score.png of an experiments.run output directory (its run.json).")


def main(argv):
  if len(argv) == 2 and argv[1] in ("-h", "--help", "--helpshort", "--helpfull"):
    print(_USAGE)
    return
  if len(argv) != 2:
    raise SystemExit(f"{_USAGE}\n(received {argv[1:]})")
  try:
    paths = draw(argv[1])
  except FileNotFoundError as e:
    raise SystemExit(str(e)) from None
  print("wrote " + ", ".join(str(p) for p in paths))


if __name__ == "__main__":
  main(sys.argv)
