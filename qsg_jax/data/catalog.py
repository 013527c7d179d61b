"""The real benchmark datasets: their original files, checksums, sources and how to read them.

Checksums are the sha256 of the uncompressed files from ``../shared/data/MANIFEST.md``. Files
without a published checksum there (covtype, road3d, yolanda, year) have ``sha256=None``: they are
used unverified, with a logged warning.

Label conventions (binary: 1 = positive):
  skin: 1 = skin (raw label 1, 20.8%), 0 = non-skin (raw 2).
  cod_rna, ijcnn1, dota2: 1 = raw +1, 0 = raw -1.
  covtype: LIBSVM covtype.binary; 1 = raw label 2, 0 = raw label 1.
  bank_marketing: 1 = "yes" (11.3%).
  accelerometer: 1 = Activity 0 (1.8%), the minority class that the incomplete-U ROC-SVM paper
    calls positive ("positive-class proportion of 1.8%"); 0 = Activity 1.
"""

import dataclasses
from typing import Callable, Optional

import numpy as np

from qsg_jax.data import formats
from qsg_jax.data.files import FileSpec

_UCI = "ml/machine-learning-databases/"


@dataclasses.dataclass(frozen=True)
class RealSpec:
  """A dataset read from original public files.

  Attributes:
    name: registry name.
    task: "binary", "ordinal" or "regression".
    files: the ``FileSpec`` of each file (optional ones, e.g. an official test split, last).
    build: ``build(sources) -> dict(x, y, feature_names[, x_test, y_test])``, where
      ``sources.open(file_name)`` is a ``files.CheckedFile`` and ``sources.has(file_name)`` says
      whether an optional file was found.
    description: source, label mapping and preprocessing.
    num_classes: 2 for binary, None for regression.
  """
  name: str
  task: str
  files: tuple
  build: Callable
  description: str
  num_classes: Optional[int] = None


def _binary(raw, positive, allowed, what):
  """Maps raw labels to {0, 1} (1 where ``raw == positive``) after checking the label set."""
  values = set(np.unique(raw).tolist())
  if not values <= set(allowed):
    raise ValueError(f"{what}: labels {sorted(values)} are not within the expected {allowed}. "
                     "Is this the original file?")
  return (raw == positive).astype(np.int64)


def _check_columns(values, expected, what):
  if values.shape[1] != expected:
    raise ValueError(f"{what} has {values.shape[1]} columns, expected {expected}. Is this the "
                     "original file?")


# --- SGEMM -----------------------------------------------------------------------------------

SGEMM_FILE = FileSpec(
    "sgemm_product.csv", "sgemm",
    "b545b908c203eaa4d0b78c88e3a7196857efc34da3b6da9be774f017f2b5e960",
    "uci", _UCI + "00440/sgemm_product_dataset.zip", container="zip")


def _build_sgemm(sources):
  with sources.open(SGEMM_FILE.name) as f:
    names, table = formats.read_table(f.stream, delimiter=",", header=True, expected_columns=18)
  return dict(x=table[:, :14], y=table[:, 14:].mean(axis=1), feature_names=names[:14])


# --- Skin Segmentation -------------------------------------------------------------------------

SKIN_FILE = FileSpec(
    "Skin_NonSkin.txt", "skin_nonskin",
    "e30c0a845385dcc95a45c45ed263465674a49638e98ef740afd520769c7714a4",
    "uci", _UCI + "00229/Skin_NonSkin.txt")


def _build_skin(sources):
  with sources.open(SKIN_FILE.name) as f:
    _, table = formats.read_table(f.stream, expected_columns=4)
  y = _binary(table[:, 3], 1.0, (1.0, 2.0), SKIN_FILE.name)
  return dict(x=table[:, :3], y=y, feature_names=("B", "G", "R"))


# --- LIBSVM cod-rna, ijcnn1, covtype -----------------------------------------------------------

COD_RNA_FILE = FileSpec(
    "cod-rna", "cod_rna", "65b7cc0689fc29bba5db8b50fab0b6446d985f4bf8f6f5dd474f7df8b2f1ab6c",
    "libsvm", "binary/cod-rna")
COD_RNA_TEST_FILE = FileSpec(
    "cod-rna.t", "cod_rna", "58cff16df896436b06343df78ccaef37a6979d819abbcadbec3cb16b93938df6",
    "libsvm", "binary/cod-rna.t", optional=True)
IJCNN1_FILE = FileSpec(
    "ijcnn1", "ijcnn1", "7fe291672c3fefe6a7e3c51529becd23f0e985ba05ffb8d53c9c648c1e91cc19",
    "libsvm", "binary/ijcnn1.bz2", container="bz2")
IJCNN1_TEST_FILE = FileSpec(
    "ijcnn1.t", "ijcnn1", "e7b0bbd518641980dc322746c6bc59d019d3153934e6258e48f9d8cfae2c4bb8",
    "libsvm", "binary/ijcnn1.t.bz2", container="bz2")
COVTYPE_FILE = FileSpec(
    "covtype.libsvm.binary", "covtype", None, "libsvm", "binary/covtype.libsvm.binary.bz2",
    container="bz2")


def _libsvm_builder(train, test, num_features, positive, allowed):
  """Builder of a LIBSVM binary dataset with an optional or required official test file."""

  def read(sources, spec):
    with sources.open(spec.name) as f:
      x, raw = formats.read_libsvm(f.stream, num_features)
    return x, _binary(raw, positive, allowed, spec.name)

  def build(sources):
    x, y = read(sources, train)
    out = dict(x=x, y=y, feature_names=tuple(f"f{i + 1}" for i in range(num_features)))
    if test is not None and sources.has(test.name):
      out["x_test"], out["y_test"] = read(sources, test)
    return out

  return build


# --- Dota2 ---------------------------------------------------------------------------------------

DOTA2_TRAIN_FILE = FileSpec(
    "dota2Train.csv", "dota2", "16823bf0ad99b4931e94809268807ef398edb7b1288b12b384aeddbee3d9ebda",
    "uci", _UCI + "00367/dota2Dataset.zip", container="zip")
DOTA2_TEST_FILE = FileSpec(
    "dota2Test.csv", "dota2", "bcc9ce564421db7340b1464dedd2691bb18af06613726ff72d142ffc2ee2aff9",
    "uci", _UCI + "00367/dota2Dataset.zip", container="zip")
_DOTA2_NAMES = ("cluster_id", "game_mode", "game_type") + tuple(f"hero_{i}" for i in range(1, 114))


def _build_dota2(sources):
  out = {}
  for spec, suffix in ((DOTA2_TRAIN_FILE, ""), (DOTA2_TEST_FILE, "_test")):
    with sources.open(spec.name) as f:
      _, table = formats.read_table(f.stream, delimiter=",", expected_columns=117)
    out["x" + suffix] = table[:, 1:]
    out["y" + suffix] = _binary(table[:, 0], 1.0, (-1.0, 1.0), spec.name)
  out["feature_names"] = _DOTA2_NAMES
  return out


# --- Bank Marketing ------------------------------------------------------------------------------

BANK_FILE = FileSpec(
    "bank-additional-full.csv", "bank_marketing",
    "74adfc578bf77a7ff4bb1ba4a9f8709d9e3c6907342959c2c8416847e0afb4d8",
    "uci", _UCI + "00222/bank-additional.zip", container="zip",
    member="bank-additional/bank-additional-full.csv")
# Levels in the order of bank-additional-names.txt.
BANK_CATEGORICAL = {
    "job": ("admin.", "blue-collar", "entrepreneur", "housemaid", "management", "retired",
            "self-employed", "services", "student", "technician", "unemployed", "unknown"),
    "marital": ("divorced", "married", "single", "unknown"),
    "education": ("basic.4y", "basic.6y", "basic.9y", "high.school", "illiterate",
                  "professional.course", "university.degree", "unknown"),
    "default": ("no", "yes", "unknown"),
    "housing": ("no", "yes", "unknown"),
    "loan": ("no", "yes", "unknown"),
    "contact": ("cellular", "telephone"),
    "month": ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
    "day_of_week": ("mon", "tue", "wed", "thu", "fri"),
    "poutcome": ("failure", "nonexistent", "success"),
}
BANK_NUMERIC = ("age", "duration", "campaign", "pdays", "previous", "emp.var.rate",
                "cons.price.idx", "cons.conf.idx", "euribor3m", "nr.employed")


def _build_bank(sources):
  with sources.open(BANK_FILE.name) as f:
    frame = formats.read_records(f.stream, delimiter=";")
  if frame.columns[-1] != "y":
    raise ValueError(f"{BANK_FILE.name}: the last column is {frame.columns[-1]!r}, expected 'y'.")
  y = _binary(frame["y"].to_numpy(str), "yes", ("no", "yes"), BANK_FILE.name)
  x, names = formats.encode_records(frame, numeric=BANK_NUMERIC, categorical=BANK_CATEGORICAL,
                                    drop=("duration", "y"))
  return dict(x=x, y=y, feature_names=names)


# --- Accelerometer Gyro Mobile Phone ------------------------------------------------------------

ACCELEROMETER_FILE = FileSpec(
    "accelerometer_gyro_mobile_phone_dataset.csv", "accelerometer_gyro",
    "058717dc7edae6033c0189e3b11a0a2a86730e1beb25a90c2b06bcd4c85fa357",
    "uci", "static/public/755/accelerometer+gyro+mobile+phone+dataset.zip", container="zip")


def _build_accelerometer(sources):
  # Column 6 is the timestamp ("34:22.9", minutes:seconds of the recording): not a predictor.
  with sources.open(ACCELEROMETER_FILE.name) as f:
    names, table = formats.read_table(f.stream, delimiter=",", header=True,
                                      usecols=(0, 1, 2, 3, 4, 5, 7))
  y = _binary(table[:, 6], 0.0, (0.0, 1.0), ACCELEROMETER_FILE.name)
  return dict(x=table[:, :6], y=y, feature_names=names[:6])


# --- Regression sets: 3D road network, Yolanda, YearPredictionMSD ------------------------------

ROAD3D_FILE = FileSpec("3D_spatial_network.txt", "road3d", None, "uci",
                       _UCI + "00246/3D_spatial_network.txt")
_YOLANDA_ZIP = "my/datasets/download/41847153-1338-4514-a693-547f1288e8c4"
YOLANDA_X_FILE = FileSpec("yolanda_train.data", "yolanda", None, "codalab", _YOLANDA_ZIP,
                          container="zip")
YOLANDA_Y_FILE = FileSpec("yolanda_train.solution", "yolanda", None, "codalab", _YOLANDA_ZIP,
                          container="zip")
YEAR_FILE = FileSpec("YearPredictionMSD.txt", "year", None, "uci",
                     _UCI + "00203/YearPredictionMSD.txt.zip", container="zip")
YEAR_NUM_TRAIN = 463_715  # The producers' split: first 463,715 rows train, last 51,630 test.


def _build_road3d(sources):
  with sources.open(ROAD3D_FILE.name) as f:
    _, table = formats.read_table(f.stream, delimiter=",", expected_columns=4)
  return dict(x=table[:, :3], y=table[:, 3], feature_names=("osm_id", "longitude", "latitude"))


def _build_yolanda(sources):
  with sources.open(YOLANDA_X_FILE.name) as f:
    _, x = formats.read_table(f.stream)
  with sources.open(YOLANDA_Y_FILE.name) as f:
    _, y = formats.read_table(f.stream)
  _check_columns(y, 1, YOLANDA_Y_FILE.name)
  if y.shape[0] != x.shape[0]:
    raise ValueError(f"{YOLANDA_X_FILE.name} has {x.shape[0]} rows but {YOLANDA_Y_FILE.name} has "
                     f"{y.shape[0]} targets.")
  return dict(x=x, y=y[:, 0], feature_names=tuple(f"f{i + 1}" for i in range(x.shape[1])))


def _build_year(sources):
  with sources.open(YEAR_FILE.name) as f:
    _, table = formats.read_table(f.stream, delimiter=",", expected_columns=91)
  names = tuple(f"timbre_avg_{i}" for i in range(1, 13)) + tuple(
      f"timbre_cov_{i}" for i in range(1, 79))
  train, test = table[:YEAR_NUM_TRAIN], table[YEAR_NUM_TRAIN:]
  return dict(x=train[:, 1:], y=train[:, 0], x_test=test[:, 1:], y_test=test[:, 0],
              feature_names=names)


REAL_DATASETS = (
    RealSpec("sgemm", "regression", (SGEMM_FILE,), _build_sgemm,
             "UCI SGEMM GPU kernel performance (id 440), sgemm_product.csv: 241,600 x 14 kernel "
             "parameters; target = mean of the 4 runtimes Run1..Run4 (ms). The ordinal protocol "
             "discretizes it into k = 5 equal-frequency bins (discretize_equal_frequency)."),
    RealSpec("skin", "binary", (SKIN_FILE,), _build_skin,
             "UCI Skin Segmentation (id 229), Skin_NonSkin.txt: B, G, R in 0..255; y = 1 for skin "
             "(raw label 1, 50,859 of 245,057), 0 for non-skin (raw 2).", 2),
    RealSpec("cod_rna", "binary", (COD_RNA_FILE, COD_RNA_TEST_FILE),
             _libsvm_builder(COD_RNA_FILE, COD_RNA_TEST_FILE, 8, 1.0, (-1.0, 1.0)),
             "LIBSVM cod-rna (59,535 x 8); y = 1 for raw +1. x_test/y_test from cod-rna.t "
             "(271,617 rows) when that file is present (it is never downloaded automatically).",
             2),
    RealSpec("ijcnn1", "binary", (IJCNN1_FILE, IJCNN1_TEST_FILE),
             _libsvm_builder(IJCNN1_FILE, IJCNN1_TEST_FILE, 22, 1.0, (-1.0, 1.0)),
             "LIBSVM ijcnn1 (train + validation, 49,990 x 22) with ijcnn1.t (91,701) as the "
             "official test split; y = 1 for raw +1.", 2),
    RealSpec("dota2", "binary", (DOTA2_TRAIN_FILE, DOTA2_TEST_FILE), _build_dota2,
             "UCI Dota2 Games Results (id 367): dota2Train.csv (92,650) and dota2Test.csv "
             "(10,294) as the official test split; y = 1 for raw +1. The 116 columns are kept as "
             "published (cluster id, game mode, game type, 113 heroes in {-1, 0, 1}), matching "
             "the 116 features of the QSG-S2AUC paper.", 2),
    RealSpec("bank_marketing", "binary", (BANK_FILE,), _build_bank,
             "UCI Bank Marketing (id 222), bank-additional-full.csv (41,188 rows); y = 1 for "
             "'yes' (4,640). 'duration' is dropped as the UCI notes advise and as the "
             "incomplete-U ROC-SVM paper does (19 predictors); the 10 categorical columns are "
             "one-hot encoded over their levels that occur ('unknown' is a level).", 2),
    RealSpec("accelerometer", "binary", (ACCELEROMETER_FILE,), _build_accelerometer,
             "UCI Accelerometer Gyro Mobile Phone (id 755): the 6 predictors accX..gyroZ; the "
             "timestamp column (mm:ss.s of the recording) is dropped, following the incomplete-U "
             "ROC-SVM paper (6 predictors). y = 1 for Activity 0 (571 of 31,991, the paper's "
             "1.8% positive class), 0 for Activity 1.", 2),
    RealSpec("covtype", "binary", (COVTYPE_FILE,),
             _libsvm_builder(COVTYPE_FILE, None, 54, 2.0, (1.0, 2.0)),
             "LIBSVM covtype.binary (581,012 x 54, covtype.libsvm.binary); y = 1 for raw label 2. "
             "No published sha256: used unverified.", 2),
    RealSpec("road3d", "regression", (ROAD3D_FILE,), _build_road3d,
             "UCI 3D Road Network (id 246), 3D_spatial_network.txt (434,874 rows); target = "
             "altitude; features OSM_ID, longitude, latitude (the 3 features of the QS3ORAO "
             "paper). No published sha256: used unverified."),
    RealSpec("yolanda", "regression", (YOLANDA_X_FILE, YOLANDA_Y_FILE), _build_yolanda,
             "Yolanda (ChaLearn AutoML challenge): yolanda_train.data (400,000 x 100) and "
             "yolanda_train.solution (target). No published sha256: used unverified."),
    RealSpec("year", "regression", (YEAR_FILE,), _build_year,
             "UCI YearPredictionMSD (id 203), YearPredictionMSD.txt: target = year, 90 timbre "
             "features; the producers' split: first 463,715 rows train (x, y), last 51,630 test "
             "(x_test, y_test). No published sha256: used unverified."),
)
