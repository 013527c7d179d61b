"""The ROC-SVM paper's Tables 1-3 as printed, and how our tables are written beside them."""

import math

from experiments import reporting

# Paper values: (mean, number in parentheses); AUC in %. None: not reported ("-").
PAPER_TABLE1 = {
    5000: {"full_time": (196.10, 7.75), "inc_time": (2.69, 0.15),
           "full_auc": (90.370, 0.88), "inc_auc": (90.370, 1.14)},
    10000: {"full_time": (819.10, 31.41), "inc_time": (3.02, 0.21),
            "full_auc": (90.374, 0.37), "inc_auc": (90.373, 0.54)},
    50000: {"full_time": None, "inc_time": (8.03, 0.90), "full_auc": None,
            "inc_auc": (90.375, 0.22)},
    100000: {"full_time": None, "inc_time": (10.26, 0.24), "full_auc": None,
             "inc_auc": (90.376, 0.10)},
}
PAPER_TABLE2 = {
    5000: {"exact_time": (10.21, 0.30), "nys_time": (4.64, 0.25),
           "exact_auc": (90.947, 0.53), "nys_auc": (90.921, 0.69)},
    10000: {"exact_time": (19.81, 2.84), "nys_time": (4.60, 0.52),
            "exact_auc": (90.863, 2.27), "nys_auc": (90.927, 0.64)},
    50000: {"exact_time": None, "nys_time": (5.19, 0.14), "exact_auc": None,
            "nys_auc": (90.936, 0.61)},
    100000: {"exact_time": None, "nys_time": (5.87, 0.14), "exact_auc": None,
             "nys_auc": (90.926, 0.64)},
}
PAPER_POPULATION_AUC = {"linear": 90.377, "radial": 90.985}
PAPER_TABLE3 = {  # dataset: (n, p, n+/n %, {kernel: (time, time se), (auc, auc "se")})
    "skin": (100000, 3, 20.8, {"linear": ((8.38, 2.09), (94.64, 1.96)),
                               "radial": ((5.82, 0.15), (98.53, 1.40))}),
    "bank_marketing": (41188, 18, 11.3, {"linear": ((0.43, 0.04), (74.71, 9.25)),
                                         "radial": ((46.33, 9.61), (76.04, 7.94))}),
    "accelerometer": (31991, 6, 1.8, {"linear": ((3.54, 0.12), (88.53, 9.15)),
                                      "radial": ((1.60, 0.38), (89.92, 21.61))}),
}
DATASET_TITLES = {"skin": "Skin Segmentation", "bank_marketing": "Bank Marketing",
                  "accelerometer": "Accelerometer"}


def cell(pair, digits=2):
  """"mean (se)" of a (mean, se) pair, or "-" when there is none."""
  if pair is None:
    return "-"
  mean, se = pair
  if mean is None or (isinstance(mean, float) and math.isnan(mean)):
    return "-"
  return f"{mean:.{digits}f} ({se:.{digits}f})"


def summary(values):
  """(mean, standard error) of a list, or None when empty."""
  if not values:
    return None
  mean, _, se = reporting.mean_std(values)
  return mean, se


def _append(path, text):
  with open(path, "a") as f:
    f.write(text)


def checks_markdown(checks):
  """The issue's checks as a markdown list."""
  lines = ["", "## Checks of issue 4", ""]
  for c in checks:
    where = f" (n_train = {c['n_train']:,})" if "n_train" in c else ""
    lines.append(f"- {c['check']}{where}: {c['value']:.4f} -> "
                 f"{'PASS' if c['pass'] else 'FAIL'}")
  return "\n".join(lines) + "\n"


def write_table(output_dir, table, rows, payload):
  """Writes ``roc_svm_table{table}.{json,md,csv}`` and appends notes and checks to the .md."""
  titles = {1: "Table 1: linear model, full vs incomplete U-statistic",
            2: "Table 2: radial model, incomplete U with and without Nystrom (d = 300)",
            3: "Table 3: real data, linear vs radial (Nystrom) incomplete ROC-SVM"}
  paths = reporting.write_results(output_dir, f"roc_svm_table{table}", payload, rows,
                                  title=titles[table])
  notes = ["", "Times in seconds (design + optimization, compilation excluded); AUC in %; "
           "mean (standard error) over repetitions. Paper columns as printed in the paper."]
  if "population_auc_percent" in payload:
    mean, se = payload["population_auc_percent"]
    notes.append(f"Population AUC of our generator (Monte Carlo): {mean:.3f}% (se {se:.3f}); "
                 f"the paper reports {payload['paper_population_auc_percent']:.3f}%.")
  _append(paths["md"], "\n".join(notes) + "\n" + checks_markdown(payload["checks"]))
  return paths
