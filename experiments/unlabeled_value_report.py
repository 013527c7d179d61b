"""Paired statistics, tables and figures of ``experiments.unlabeled_value``.

A *cell* is one trial at one (labeled size, unlabeled size): the AUC of every gamma, all trained on
the same labeled / unlabeled / evaluation split with the same training key. The value of the
unlabeled term at gamma is the paired difference AUC(gamma) - AUC(gamma = 1) over the trials where
neither run diverged, reported as mean +- standard error (std of the differences / sqrt(trials)).
"""

import math
import pathlib

import numpy as np

from experiments.common import reporting

# |mean difference| above this many standard errors counts as an effect in the verdicts.
EFFECT_SE = 2.0


def paired_difference(aucs, reference):
  """(mean, standard error, trials used) of ``aucs - reference`` over trials finite in both.

  Args:
    aucs: [t] AUCs at one gamma (NaN where the run diverged).
    reference: [t] AUCs at gamma = 1 of the same trials.

  Returns:
    (mean, se, n); se is NaN for n < 2, mean is NaN for n = 0.

  Example:
    >>> mean, se, n = paired_difference([0.8, 0.9, np.nan], [0.7, 0.7, 0.7])
    >>> round(mean, 6), round(se, 6), n     # diffs 0.1, 0.2: se = std / sqrt(2)
    (0.15, 0.05, 2)
  """
  aucs, reference = np.asarray(aucs, np.float64), np.asarray(reference, np.float64)
  ok = np.isfinite(aucs) & np.isfinite(reference)
  diff = aucs[ok] - reference[ok]
  n = int(diff.size)
  if n == 0:
    return float("nan"), float("nan"), 0
  se = float(diff.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
  return float(diff.mean()), se, n


def verdict(mean, se):
  """"helps" / "hurts" when |mean| > EFFECT_SE standard errors, else "no difference"."""
  if not (np.isfinite(mean) and np.isfinite(se)):
    return "n/a"
  if mean > EFFECT_SE * se:
    return "helps"
  if mean < -EFFECT_SE * se:
    return "hurts"
  return "no difference"


def summarize(cells, gammas):
  """One row per (labeled size, unlabeled size, gamma) from the cells of one dataset.

  Args:
    cells: list of cell dicts with "num_labeled", "num_unlabeled", "trial", "gammas", "auc"
      ([len(gammas)], None where diverged), "diverged" ([len(gammas)] bool).
    gammas: the gammas of the run (must contain 1.0).

  Returns:
    List of dicts: num_labeled, num_unlabeled, gamma, trials, diverged, auc_mean, auc_std,
    diff_mean, diff_se, pairs, verdict.
  """
  ref = list(gammas).index(1.0)
  rows = []
  for n_l, n_u in sorted({(c["num_labeled"], c["num_unlabeled"]) for c in cells}):
    mine = sorted((c for c in cells if c["num_labeled"] == n_l and c["num_unlabeled"] == n_u),
                  key=lambda c: c["trial"])
    auc = np.array([[np.nan if a is None else a for a in c["auc"]] for c in mine], np.float64)
    diverged = np.array([c["diverged"] for c in mine], bool)
    for g, gamma in enumerate(gammas):
      finite = auc[np.isfinite(auc[:, g]), g]
      mean, std, _ = reporting.mean_std(finite)
      d_mean, d_se, pairs = paired_difference(auc[:, g], auc[:, ref])
      rows.append({"num_labeled": n_l, "num_unlabeled": n_u, "gamma": float(gamma),
                   "trials": len(mine), "diverged": int(diverged[:, g].sum()),
                   "auc_mean": mean, "auc_std": std,
                   "diff_mean": 0.0 if g == ref else d_mean,
                   "diff_se": 0.0 if g == ref else d_se, "pairs": pairs,
                   "verdict": "reference" if g == ref else verdict(d_mean, d_se)})
  return rows


def _number(value):
  """A float, NaN for None (the JSON form of NaN)."""
  return float("nan") if value is None else float(value)


def table_rows(rows):
  """Rows of the markdown table: one per (labeled, unlabeled) size, one column per gamma.

  A cell reads "mean AUC / diff +- se" (the difference to gamma = 1 with its paired standard
  error; "*" marks |diff| > 2 se); the last columns count trials and diverged runs.
  """
  out = []
  for n_l, n_u in sorted({(r["num_labeled"], r["num_unlabeled"]) for r in rows}):
    mine = [r for r in rows if r["num_labeled"] == n_l and r["num_unlabeled"] == n_u]
    line = {"labeled": n_l, "unlabeled": n_u, "trials": mine[0]["trials"],
            "diverged": ",".join(str(r["diverged"]) for r in mine)}
    for r in mine:
      r = dict(r, **{k: _number(r[k]) for k in ("auc_mean", "diff_mean", "diff_se")})
      if r["verdict"] == "reference":
        text = f"{r['auc_mean']:.4f} (ref)"
      elif not np.isfinite(r["diff_mean"]):
        text = f"{r['auc_mean']:.4f} / n/a"
      else:
        mark = "*" if r["verdict"] in ("helps", "hurts") else ""
        text = f"{r['auc_mean']:.4f} / {r['diff_mean']:+.4f} +- {r['diff_se']:.4f}{mark}"
      line[f"gamma={r['gamma']:g}"] = text
    out.append(line)
  return out


def _panels(rows):
  """Rows grouped by the rank of their unlabeled size within their labeled size.

  "all" unlabeled points is n - n_l, a different number for each labeled size: ranking puts the
  i-th smallest unlabeled size of every labeled size in panel i. Returns [(title, rows)].
  """
  ranks = {}
  for n_l in {r["num_labeled"] for r in rows}:
    sizes = sorted({r["num_unlabeled"] for r in rows if r["num_labeled"] == n_l})
    ranks.update({(n_l, n_u): i for i, n_u in enumerate(sizes)})
  panels = []
  for i in sorted(set(ranks.values())):
    mine = [r for r in rows if ranks[(r["num_labeled"], r["num_unlabeled"])] == i]
    sizes = sorted({r["num_unlabeled"] for r in mine})
    title = (f"{sizes[0]} unlabeled" if len(sizes) == 1 else
             f"all unlabeled ({sizes[0]}-{sizes[-1]})")
    panels.append((title, mine))
  return panels


def plot_dataset(rows, dataset, metric, path):
  """AUC(gamma) - AUC(1) against gamma, one line per labeled size, a panel per unlabeled size.

  Error bars are +- 2 paired standard errors (the verdicts' threshold). Returns the path.
  """
  plt = reporting.pyplot()
  panels = _panels(rows)
  fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 4.0), squeeze=False,
                           sharey=True)
  for ax, (title, mine_rows) in zip(axes[0], panels):
    for n_l in sorted({r["num_labeled"] for r in mine_rows}):
      mine = [r for r in mine_rows if r["num_labeled"] == n_l]
      gam = np.array([r["gamma"] for r in mine])
      mean = np.array([_number(r["diff_mean"]) for r in mine])
      se = np.nan_to_num(np.array([_number(r["diff_se"]) for r in mine]))
      ax.errorbar(gam + 0.006 * np.log2(n_l / 50.0), mean, yerr=EFFECT_SE * se, marker="o",
                  ms=3, capsize=2, label=f"{n_l} labeled ({mine[0]['trials']} trials)")
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("gamma (1 = labeled pairs only)")
    ax.set_title(title)
    ax.legend(fontsize=7)
  axes[0][0].set_ylabel(f"{metric}(gamma) - {metric}(1), +- 2 SE")
  fig.suptitle(f"{dataset}: value of the unlabeled term (paired over trials)")
  fig.tight_layout()
  return reporting.save_figure(fig, pathlib.Path(path))


def conclusion_lines(dataset, rows):
  """Plain-language lines: where the unlabeled term helps or hurts (|diff| > 2 SE)."""
  if not rows:
    return [f"{dataset}: no measurements, so no conclusion."]
  lines = []
  for kind in ("helps", "hurts"):
    hits = [r for r in rows if r["verdict"] == kind]
    if hits:
      where = "; ".join(f"{r['num_labeled']} labeled / {r['num_unlabeled']} unlabeled, gamma "
                        f"{r['gamma']:g} ({r['diff_mean']:+.4f} +- {r['diff_se']:.4f})"
                        for r in hits)
      lines.append(f"{dataset}: the unlabeled term {kind} at {where}.")
  if not lines:
    lines.append(f"{dataset}: no gamma < 1 differs from gamma = 1 by more than 2 standard errors.")
  return lines


def rows_from_report(text):
  """{dataset: (metric, rows)} read back from the markdown report ``unlabeled_value.md``.

  The report's tables print every number ``plot_dataset`` draws ("mean AUC / diff +- se" per
  gamma, "mean (ref)" at gamma = 1, "n/a" where every run diverged), so its figures can be
  redrawn from the committed report without the run's files (which live in git-ignored results/).
  """
  out, dataset, metric = {}, None, None
  for line in text.splitlines():
    if line.startswith("### "):
      dataset = line[4:].split(" ")[0]
      metric = "ordinal AUC" if "ordinal AUC" in line else "AUC"
      out[dataset] = (metric, [])
      header = None
      continue
    if dataset is None or not line.startswith("|") or line.startswith("|---"):
      continue
    cells = [c.strip() for c in line.strip("|").split("|")]
    if cells[0] == "labeled":
      header = cells
      continue
    if header is None or not cells[0].isdigit():
      continue
    for name, cell in zip(header[4:], cells[4:]):
      gamma = float(name.split("=")[1])
      if cell.endswith("(ref)"):
        diff, se = 0.0, 0.0
      elif cell.endswith("n/a"):
        diff, se = float("nan"), float("nan")
      else:
        diff_text, se_text = cell.split(" / ")[1].split(" +- ")
        diff, se = float(diff_text), float(se_text.rstrip("*"))
      out[dataset][1].append({"num_labeled": int(cells[0]), "num_unlabeled": int(cells[1]),
                              "trials": int(cells[2]), "gamma": gamma, "diff_mean": diff,
                              "diff_se": se})
  return out


def main():
  """``python -m experiments.unlabeled_value_report REPORT.md OUT_DIR``: every dataset's figure
  redrawn from the published report (OUT_DIR/unlabeled_value_<dataset>.png)."""
  import sys  # pylint: disable=import-outside-toplevel
  usage = ("usage: python -m experiments.unlabeled_value_report REPORT.md OUT_DIR\n  Redraws "
           "every dataset's figure of an unlabeled_value report into OUT_DIR.")
  if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help", "--helpshort", "--helpfull"):
    print(usage)
    return
  if len(sys.argv) != 3:
    raise SystemExit(usage)
  report = pathlib.Path(sys.argv[1])
  if not report.is_file():
    raise SystemExit(f"error: {report}: no such file. Pass an unlabeled_value report, e.g. "
                     "experiments/reproduction/unlabeled_value.md.\n" + usage)
  tables = {name: table for name, table in rows_from_report(
      report.read_text(errors="replace")).items() if table[1]}
  if not tables:
    raise SystemExit(f"error: {report} holds no unlabeled_value table (a '### dataset' heading "
                     "over a table whose header starts with 'labeled'); nothing to draw.")
  out_dir = pathlib.Path(sys.argv[2])
  out_dir.mkdir(parents=True, exist_ok=True)
  for dataset, (metric, rows) in tables.items():
    print(plot_dataset(rows, dataset, metric, out_dir / f"unlabeled_value_{dataset}.png"))


if __name__ == "__main__":
  main()
