"""Real datasets that ship inside installed packages: they load with no data directory.

skordinal bundles four ordinal benchmark sets as CSV files in ``skordinal/datasets/data/``
(read by ``skordinal.datasets.load_era`` etc.; targets already zero-based): ERA (1000 x 4,
9 classes), ESL (488 x 4, 9 classes), LEV (1000 x 4, 5 classes) and SWD (1000 x 10, 4 classes).
scikit-learn bundles the Wisconsin breast cancer set (569 x 30), used here as a binary set with
1 = malignant (sklearn's target 0, 212 points) and 0 = benign (sklearn's target 1).
"""

import numpy as np

from qsg_jax.data.dataset import make_dataset

SKORDINAL_SETS = {
    "era": ("load_era", "ERA (Ben-David 1992): 4 ordinal attributes of job candidates; "
            "acceptance level 1..9 mapped to classes 0..8."),
    "esl": ("load_esl", "ESL (Ben-David 1992): 4 psychometric scores of job applicants; fitness "
            "rating 1..9 mapped to classes 0..8."),
    "lev": ("load_lev", "LEV (Ben-David 1992): 4 attributes of lecturer evaluations; rating "
            "1..5 mapped to classes 0..4."),
    "swd": ("load_swd", "SWD (Ben-David 1992): 10 attributes of social workers' decisions; "
            "risk level 1..4 mapped to classes 0..3."),
}


def load_skordinal(name):
  """Loads one of skordinal's bundled ordinal sets ("era", "esl", "lev", "swd").

  Args:
    name: lower-case set name.

  Returns:
    ``Dataset`` with task "ordinal", y int 0..k-1.
  """
  from skordinal import datasets as sko_datasets  # pylint: disable=g-import-not-at-top  (slow)
  loader_name, text = SKORDINAL_SETS[name]
  bunch = getattr(sko_datasets, loader_name)()
  k = len(bunch.target_names)
  target = np.asarray(bunch.target)
  # skordinal codes the published classes 1..k as 0..k-1; check rather than assume.
  if target.min() != 0 or target.max() != k - 1:
    raise ValueError(f"skordinal {name}: expected zero-based targets 0..{k - 1}; received "
                     f"{target.min()}..{target.max()}. The installed skordinal changed its "
                     "coding; update qsg_jax.data.embedded.")
  return make_dataset(name, "ordinal", np.asarray(bunch.data, dtype=np.float64), target,
                      feature_names=tuple(bunch.feature_names), num_classes=k,
                      description=f"{text} Shipped in skordinal (skordinal.datasets."
                                  f"{loader_name}).")


def load_breast_cancer():
  """scikit-learn's Wisconsin diagnostic breast cancer set as a binary set (1 = malignant)."""
  from sklearn import datasets as sk_datasets  # pylint: disable=g-import-not-at-top
  bunch = sk_datasets.load_breast_cancer()
  y = (np.asarray(bunch.target) == 0).astype(np.int64)  # sklearn: 0 = malignant, 1 = benign.
  return make_dataset("breast_cancer", "binary", bunch.data, y,
                      feature_names=tuple(bunch.feature_names),
                      description="Wisconsin diagnostic breast cancer (569 x 30), shipped in "
                                  "scikit-learn; y = 1 for malignant (sklearn target 0, 212 "
                                  "points), 0 for benign.")
