"""Statistics and the issue's checks of ``experiments.auc_comparison``, from its per-trial rows.

``summarize`` gives the mean and std of the AUC per (dataset, method, setting);
``closeness_checks`` compares QSG with the better exact method at the common size (check (a):
within ``TOLERANCE``); ``supervised_checks`` pairs QS3ORAO with the supervised SVOREX over trials
(check (c)); ``plot`` draws the papers' Figure 2 box plots.
"""

import numpy as np

from experiments import comparison_methods as cm
from experiments import reporting

TOLERANCE = 0.01   # issue check: QSG within this of the better exact method


def summarize(rows):
  """Mean and std of the AUC per (dataset, method, setting) over the trials that ran."""
  out = []
  for key in dict.fromkeys((r["dataset"], r["method"], r["setting"]) for r in rows):
    mine = [r for r in rows if (r["dataset"], r["method"], r["setting"]) == key]
    ok = [r for r in mine if r["status"] == "ok"]
    auc = reporting.mean_std([r["auc"] for r in ok])
    seconds = reporting.mean_std([r["train_time_s"] for r in ok])
    sizes = {r["num_unlabeled"] for r in mine}
    scored = sorted({r["splits_scored"] for r in ok})
    out.append({"dataset": key[0], "method": key[1], "setting": key[2],
                "num_unlabeled": "0 (supervised)" if sizes == {0} else "/".join(
                    str(s) for s in sorted(sizes)),
                "auc_mean": auc[0], "auc_std": auc[1], "trials_ok": f"{len(ok)}/{len(mine)}",
                "splits_scored": ("/".join(str(v) for v in scored) +
                                  f" of {mine[0]['num_splits']}"),
                "train_time_s": seconds[0], "num_eval": mine[0]["num_eval"]})
  return out


def closeness_checks(summary):
  """Per dataset: QSG mean AUC at the common size minus the better exact method's (>= -0.01),
  and, when it ran, minus the exact minimizer of QSG's own objective.

  The means are over the trials that ran; a QSG trial that diverged (or failed otherwise) fails
  the check whatever the mean of the others.
  """
  out = []
  for name in dict.fromkeys(s["dataset"] for s in summary):
    mine = {(s["method"], s["setting"]): s["auc_mean"] for s in summary if s["dataset"] == name}
    qsg_row = next(s for s in summary
                   if s["dataset"] == name and cm.is_qsg(s["method"]) and s["setting"] == "common")
    qsg, qsg_ok = qsg_row["auc_mean"], qsg_row["trials_ok"]
    ran, total = (int(v) for v in qsg_ok.split("/"))
    exact = {m: v for (m, s), v in mine.items() if m in cm.BASELINE_KEYS and m != "SVOREX"}
    if not exact or not np.isfinite(list(exact.values())).any():
      continue
    better = max((m for m in exact if np.isfinite(exact[m])), key=lambda m: exact[m])
    full = mine.get((next(m for m, _ in mine if cm.is_qsg(m)), "full"), float("nan"))
    own = next((v for (m, s), v in mine.items() if m in cm.EXACT_OF.values()), float("nan"))
    out.append({"dataset": name, "qsg_common": qsg, "better_exact": better,
                "exact_auc": exact[better], "difference": qsg - exact[better],
                "within_0.01": bool(ran == total and qsg >= exact[better] - TOLERANCE),
                "qsg_trials_ok": qsg_ok, "qsg_all_trials_ok": ran == total, "qsg_full": full,
                "qsg_exact_objective": own, "qsg_minus_its_exact": qsg - own,
                "its_exact_minus_better_exact": own - exact[better]})
  return out


def supervised_checks(rows):
  """QS3ORAO minus SVOREX, paired over trials, for each evaluation setting (claim (c))."""
  out = []
  for name in dict.fromkeys(r["dataset"] for r in rows if r["method"] == "SVOREX"):
    for setting in ("common", "full"):
      pick = lambda m: {r["trial"]: r["auc"] for r in rows if r["dataset"] == name and
                        r["method"] == m and r["setting"] == setting and r["status"] == "ok"}
      semi, sup = pick("QS3ORAO"), pick("SVOREX")
      trials = sorted(set(semi) & set(sup))
      if not trials:
        continue
      diff = [semi[t] - sup[t] for t in trials]
      mean, std, se = reporting.mean_std(diff)
      out.append({"dataset": name, "setting": setting, "qs3orao": float(np.mean(
          [semi[t] for t in trials])), "svorex": float(np.mean([sup[t] for t in trials])),
                  "mean_difference": mean, "std_difference": std, "stderr": se,
                  "qs3orao_wins": f"{sum(d > 0 for d in diff)}/{len(diff)}"})
  return out


def report_lines(summary, closeness, supervised):
  """The printed summary: mean AUC per method and setting, then checks (a) and (c)."""
  lines = ["\nmean AUC (std) over trials:"]
  for s in summary:
    lines.append(f"  {s['dataset']:>13} {s['method']:>10} {s['setting']:>6} "
                 f"(n_u {s['num_unlabeled']}): {s['auc_mean']:.4f} ({s['auc_std']:.4f}), "
                 f"{s['trials_ok']} trials ok, {s['splits_scored']} splits scored")
  lines.append(f"\ncheck (a): QSG at the common size within {TOLERANCE} of the better exact "
               "method:")
  for c in closeness:
    lines.append(
        f"  {c['dataset']}: QSG {c['qsg_common']:.4f} vs {c['better_exact']} "
        f"{c['exact_auc']:.4f}: difference {c['difference']:+.4f} "
        f"({'pass' if c['within_0.01'] else 'FAIL'}"
        + (f"; QSG ran in only {c['qsg_trials_ok']} trials, the others diverged or failed"
           if not c["qsg_all_trials_ok"] else "")
        + "); QSG on the full set "
        + (f"{c['qsg_full']:.4f}" if np.isfinite(c["qsg_full"]) else "not run"))
    if np.isfinite(c["qsg_exact_objective"]):
      lines.append(f"    exact minimizer of QSG's objective {c['qsg_exact_objective']:.4f}: QSG "
                   f"minus it {c['qsg_minus_its_exact']:+.4f} (approximation), it minus "
                   f"{c['better_exact']} {c['its_exact_minus_better_exact']:+.4f} (model class)")
  if supervised:
    lines.append("\ncheck (c): QS3ORAO minus supervised SVOREX, paired over trials:")
  for c in supervised:
    lines.append(f"  {c['dataset']} [{c['setting']}]: {c['mean_difference']:+.4f} +- "
                 f"{c['std_difference']:.4f} (std), QS3ORAO better in {c['qs3orao_wins']} "
                 "trials")
  return lines


def plot(rows, path):
  """Box plot of the AUC per dataset (one panel each), one box per method and setting."""
  plt = reporting.pyplot()
  names = list(dict.fromkeys(r["dataset"] for r in rows))
  cols = min(3, len(names))
  nrows = -(-len(names) // cols)
  fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.6 * nrows), squeeze=False)
  for ax, name in zip(axes.ravel(), names):
    mine = [r for r in rows if r["dataset"] == name and r["status"] == "ok"]
    keys = list(dict.fromkeys((r["method"], r["setting"]) for r in mine))
    values = [[r["auc"] for r in mine if (r["method"], r["setting"]) == key] for key in keys]
    sizes = {s: max((r["num_unlabeled"] for r in mine if r["setting"] == s), default=0)
             for s in ("common", "full")}
    labels = [f"{m}\n{'n_u=' + str(sizes[s]) if s == 'common' else 'full'}" for m, s in keys]
    ax.boxplot(values)
    ax.set_xticks(range(1, len(keys) + 1), labels, fontsize=7)
    ax.set_title(name)
    binary = cm.BINARY_METHODS + (cm.EXACT_OF["QSG-S2AUC"],)
    ax.set_ylabel("AUC" if all(m in binary for m, _ in keys) else "ordinal AUC")
  for ax in axes.ravel()[len(names):]:
    ax.axis("off")
  fig.tight_layout()
  reporting.save_figure(fig, path)
