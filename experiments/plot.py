r"""Redraws the main job's plots from its saved results, without retraining.

  python -m experiments.plot results/lev

Reads ``RESULTS_DIR/run.json`` (or, for a run that did not finish, its ``trials/*.json``) and
writes into the same directory:
  run_auc.png             AUC of each ordinal split {y <= j} vs {y > j} per trial (binary: one
                          split), with the trial's mean;
  run_max_abs_score.png   max |f| on the labeled points over the iterations, one line per trial
                          (the divergence check watches this; converging runs stay near 1-3).
"""

import json
import pathlib
import sys

import numpy as np

from experiments import reporting


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
  rows = [json.loads(p.read_text()) for p in sorted(results_dir.glob("trials/trial_*.json"))]
  if not rows:
    raise FileNotFoundError(f"{results_dir} holds no results of experiments.run (no run.json, "
                            "no trials/trial_*.json); pass the --output_dir of a run.")
  return rows, False


def draw(results_dir):
  """Writes run_auc.png and run_max_abs_score.png into ``results_dir``; returns their paths."""
  results_dir = pathlib.Path(results_dir)
  rows, complete = load_trials(results_dir)
  note = "" if complete else " (unfinished run)"
  plt = reporting.pyplot()
  fig, ax = plt.subplots(figsize=(6, 4))
  for r in rows:
    per_split = np.asarray(r["auc_per_split"], dtype=float)
    line, = ax.plot(np.arange(per_split.size), per_split, "o-", alpha=0.7,
                    label=f"trial {r['trial']}: {r['auc']:.4f}")
    ax.axhline(r["auc"], color=line.get_color(), ls=":", lw=0.8)
  ax.set_xlabel("split j ({y <= j} vs {y > j})")
  ax.set_xticks(range(len(rows[0]["auc_per_split"])))
  ax.set_ylabel("AUC on the evaluation points")
  ax.set_title(f"AUC per split and trial (dotted: trial mean){note}")
  if len(rows) <= 12:
    ax.legend(fontsize=7)
  fig.tight_layout()
  paths = [reporting.save_figure(fig, results_dir / "run_auc.png")]
  fig, ax = plt.subplots(figsize=(6, 4))
  for r in rows:
    values = np.asarray(r["max_abs_score"], dtype=float)
    ax.plot(np.arange(1, values.size + 1), values, lw=0.8, label=f"trial {r['trial']}")
  ax.set_xscale("log")
  ax.set_yscale("log")
  ax.set_xlabel("iteration t")
  ax.set_ylabel("max |f| on the labeled points")
  ax.set_title(f"Score magnitude over training{note}")
  if len(rows) <= 12:
    ax.legend(fontsize=7)
  fig.tight_layout()
  paths.append(reporting.save_figure(fig, results_dir / "run_max_abs_score.png"))
  return paths


def main(argv):
  if len(argv) != 2:
    raise SystemExit(f"usage: python -m experiments.plot RESULTS_DIR (received {argv[1:]})")
  try:
    paths = draw(argv[1])
  except FileNotFoundError as e:
    raise SystemExit(str(e)) from None
  print("wrote " + ", ".join(str(p) for p in paths))


if __name__ == "__main__":
  main(sys.argv)
