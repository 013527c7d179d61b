"""Model files that predict identically anywhere: ``freeze``, ``save`` and ``load``.

A trained model regenerates its feature frequencies from a PRNG key, and what a key generates
depends on JAX's PRNG implementation, its ``jax_threefry_partitionable`` flag and JAX's version:
a model reloaded under another setting would predict differently without a word. A model file
therefore stores the frequencies themselves ([T, m, d] float32: 1.75 MiB for the sgemm defaults
T = 1024, m = 32, d = 14; the whole file is about 2.0 MiB). That costs T m d floats instead of two
integers, and buys predictions that no PRNG setting or JAX upgrade can change.

``freeze(result)`` is a ``FrozenModel`` (NumPy arrays only, so it pickles); ``frozen_scores``
scores through the stored frequencies with the same blocked computation as
``engine.model_scores``. The estimators predict through a ``FrozenModel`` too, so a fitted
estimator, its pickle and its model file give bit-identical predictions.

The file is a plain ``.npz`` (no pickle: loading never runs code) holding the arrays and one JSON
metadata entry: the format name and version, the kind of object, what it needs besides arrays,
the versions that wrote it, and the sha256 of every array, so that a truncated or corrupted file
is refused rather than misread. A schedule callable is never stored: prediction does not need it.

    qsg_jax.io.save(result, "model.npz")   # a FitResult, FrozenModel, QS3ORAO or QSGS2AUC
    model = qsg_jax.io.load("model.npz")   # a FrozenModel, or the fitted estimator
"""

import functools
import hashlib
import importlib
import json
import os
import tempfile
import warnings
import zipfile
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import numerics
from qsg_jax.engine import features
from qsg_jax.engine import scoring
from qsg_jax import thresholds as thresholds_lib
from qsg_jax import training
from qsg_jax.errors import ChecksumError

FORMAT = "qsg_jax-model"
FORMAT_VERSION = 1
_ESTIMATORS = ("QS3ORAO", "QSGS2AUC")   # classes of qsg_jax.estimators that save() knows


class FrozenModel(NamedTuple):
  """What prediction needs, frequencies included: f(x) = scale * sum_j coef_j . phi_j(x)."""
  frequencies: np.ndarray  # [T, m, d] float32, Omega_j of every block (already times
                           # sqrt(2 sigma)).
  coef: np.ndarray         # [T, 2m] float32, stored coefficients.
  scale: np.ndarray        # float32 scalar.
  thresholds: np.ndarray   # [k-1] float32 ordered thresholds on f.
  block_group: int         # feature blocks per matrix product (as in training).
  predict_chunk: int       # points per matrix product.

  def decision_function(self, x) -> np.ndarray:
    """Checked ranking scores f(x): [n] float32 for x [n, d]."""
    x = validation.check_points("x", x, dim=self.frequencies.shape[2])
    return frozen_scores(self, check_phases(self, x))

  def predict(self, x) -> np.ndarray:
    """Ordinal classes 0..k-1 (number of thresholds below f(x)): [n] int32."""
    scores = jnp.asarray(self.decision_function(x))
    return np.asarray(thresholds_lib.predict_classes(scores, jnp.asarray(self.thresholds)))


def check_phases(model: FrozenModel, x, name="x"):
  """Returns ``x`` after checking every phase omega . x stays within ``numerics.MAX_PHASE``.

  |omega . x| <= max ||omega|| max ||x|| (Cauchy-Schwarz) over the stored frequencies; past
  2^19 a float32 phase has lost its precision and the features would be NaN.

  Raises:
    ValueError: points too large for the model's frequencies, with what to change.
  """
  arr = np.asarray(x)
  if arr.size:
    norm = float(np.sqrt(np.max(np.sum(np.square(arr, dtype=np.float64), axis=1))))
    largest = float(np.sqrt(np.max(np.sum(np.square(model.frequencies, dtype=np.float64), -1))))
    if norm * largest > numerics.MAX_PHASE:
      raise ValueError(
          f"{name} has a point of norm {norm:.3g}; with frequencies of norm up to "
          f"{largest:.3g} its Fourier phases can reach {norm * largest:.3g}, beyond "
          f"{numerics.MAX_PHASE:.0f} where float32 phases lose their precision. Pass points "
          "preprocessed like the training data (same scaling).")
  return arr


def freeze(result: training.FitResult) -> FrozenModel:
  """The ``FrozenModel`` of a ``FitResult``: its frequencies regenerated once, under the current
  PRNG configuration (the one that trained it), and stored.

  Args:
    result: ``FitResult`` from ``qsg_jax.fit``.

  Returns:
    ``FrozenModel`` of NumPy arrays; ``frozen_scores`` equals ``qsg_jax.decision_function``.

  Raises:
    ValueError: a fit with per-split corrections (``split_lam``): they are not stored.
  """
  if not isinstance(result, training.FitResult):
    raise TypeError(f"freeze needs the FitResult of qsg_jax.fit; received "
                    f"{type(result).__name__}.")
  model, config = result.model, result.config
  if model.split_coef is not None:
    raise ValueError("model files store the shared ranking function f only, not the per-split "
                     "corrections g_j of a fit with split_lam: refit with split_lam=None to save "
                     "it, or keep the FitResult (qsg_jax.split_scores scores its splits).")
  num_blocks, two_m = model.coef.shape
  # Jitted like the scoring that regenerates them: eager ops round sqrt(2 sigma) * normal
  # differently in the last bit, jitted ones give frequencies (and scores) bit-identical to
  # ``qsg_jax.decision_function``'s.
  omega = _frequencies(model.feature_key, jnp.arange(num_blocks), two_m // 2,
                       result.num_features, model.sigma)
  return FrozenModel(
      frequencies=np.asarray(omega).reshape(num_blocks, two_m // 2, result.num_features),
      coef=np.asarray(model.coef), scale=np.asarray(model.scale, np.float32),
      thresholds=np.asarray(result.thresholds, np.float32),
      block_group=int(config.block_group), predict_chunk=int(config.predict_chunk))


_frequencies = jax.jit(features.sample_frequency_blocks, static_argnums=(2, 3))


@functools.partial(jax.jit, static_argnames=("block_group", "predict_chunk"))
def _scores(frequencies, coef, scale, x, block_group, predict_chunk):
  """``engine.model_scores`` with the frequencies read instead of regenerated."""
  d = frequencies.shape[2]
  return scale * scoring.chunked_block_sums(
      lambda blocks: frequencies[blocks].reshape(-1, d), coef, x, block_group, predict_chunk)


def frozen_scores(model: FrozenModel, x) -> np.ndarray:
  """Scores f(x) of a ``FrozenModel`` (unchecked; see ``FrozenModel.decision_function``).

  Args:
    model: ``FrozenModel``.
    x: [n, d] float32 points.

  Returns:
    [n] float32 scores.
  """
  return np.asarray(_scores(jnp.asarray(model.frequencies), jnp.asarray(model.coef),
                            jnp.asarray(model.scale), jnp.asarray(x, jnp.float32),
                            model.block_group, model.predict_chunk))


def _frozen_arrays(model: FrozenModel):
  arrays = {name: np.asarray(getattr(model, name))
            for name in ("frequencies", "coef", "scale", "thresholds")}
  return arrays, {"block_group": model.block_group, "predict_chunk": model.predict_chunk}


def _digest(array: np.ndarray) -> str:
  header = f"{array.dtype.str}{array.shape}".encode()
  return hashlib.sha256(header + np.ascontiguousarray(array).tobytes()).hexdigest()


def _plain_array(name, value):
  """``value`` as an array that ``np.load`` reads without pickle (object arrays of str become
  unicode arrays), else a clear error."""
  array = np.asarray(value)
  if array.dtype == object:
    if all(isinstance(v, str) for v in array.ravel()):
      return array.astype(str)
    raise TypeError(f"cannot store {name} of dtype object ({array.ravel()[:3].tolist()}...) "
                    "without pickle; use numeric or string labels.")
  return array


def _estimator_parts(estimator):
  """Arrays and metadata of a fitted QS3ORAO / QSGS2AUC."""
  from sklearn.utils.validation import check_is_fitted   # pylint: disable=g-import-not-at-top
  check_is_fitted(estimator)
  arrays, meta = _frozen_arrays(estimator.model_)
  arrays["classes"] = _plain_array("classes_", estimator.classes_)
  arrays["input_min"] = np.asarray(estimator.input_min_)
  arrays["input_scale"] = np.asarray(estimator.input_scale_)
  if hasattr(estimator, "feature_names_in_"):
    arrays["feature_names_in"] = _plain_array("feature_names_in_", estimator.feature_names_in_)
  params = {}
  for name, value in estimator.get_params().items():
    if hasattr(value, "dtype") and hasattr(value, "shape"):
      value = np.asarray(value).tolist()   # NumPy / JAX scalars and arrays: as Python values
    if callable(value) or not _json_ready(value):
      meta.setdefault("params_not_stored", {})[name] = repr(value)[:200]
      value = None
    params[name] = value
  meta.update(params=params, seed=int(estimator.seed_))
  return arrays, meta


def _json_ready(value):
  try:
    json.dumps(value)
    return True
  except TypeError:
    return False


def save(model: Any, path) -> None:
  """Writes a model file (atomically: a temporary file renamed into place).

  Args:
    model: a ``FitResult``, a ``FrozenModel``, or a fitted ``QS3ORAO`` / ``QSGS2AUC``.
    path: file name (written as given; ``.npz`` is a good suffix).

  Raises:
    TypeError: another kind of object, or labels that cannot be stored without pickle.
    sklearn.exceptions.NotFittedError: an estimator that was not fitted.
  """
  kind = type(model).__name__
  if isinstance(model, training.FitResult):
    arrays, meta = _frozen_arrays(freeze(model))
    kind = "FrozenModel"
  elif isinstance(model, FrozenModel):
    arrays, meta = _frozen_arrays(model)
  elif kind in _ESTIMATORS and type(model).__module__ == "qsg_jax.estimators":
    arrays, meta = _estimator_parts(model)
  else:
    raise TypeError(f"save takes a FitResult, a FrozenModel or a fitted "
                    f"{' / '.join(_ESTIMATORS)}; received {kind}. Other objects: use pickle.")
  import qsg_jax   # pylint: disable=g-import-not-at-top  (the package version, at call time)
  meta.update(format=FORMAT, format_version=FORMAT_VERSION, kind=kind,
              written_by={"qsg_jax": getattr(qsg_jax, "__version__", "unknown"),
                          "jax": jax.__version__, "numpy": np.__version__},
              sha256={name: _digest(array) for name, array in arrays.items()})
  arrays["metadata"] = np.asarray(json.dumps(meta, sort_keys=True))
  path = os.fspath(path)
  folder = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(folder):
    raise FileNotFoundError(f"cannot save to {os.fspath(path)!r}: its folder {folder!r} does not "
                            "exist; create it first (os.makedirs).")
  handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".npz")
  try:
    with os.fdopen(handle, "wb") as file:
      np.savez(file, **arrays)
    os.replace(temporary, path)
  except BaseException:
    os.unlink(temporary)
    raise


def _read(path):
  """(arrays, metadata) of a model file, refusing anything that is not one written intact."""
  try:
    with open(path, "rb") as file, np.load(file, allow_pickle=False) as contents:
      arrays = {name: contents[name] for name in contents.files}
  except FileNotFoundError:
    raise
  except (zipfile.BadZipFile, EOFError, ValueError, OSError, KeyError) as error:
    raise ChecksumError(
        f"{path} is not a readable qsg_jax model file (truncated or corrupted?): "
        f"{type(error).__name__}: {str(error)[:200]}. Save the model again with "
        "qsg_jax.io.save.") from error
  try:
    meta = json.loads(str(arrays.pop("metadata")))
  except (KeyError, ValueError) as error:
    raise ChecksumError(f"{path} has no readable metadata entry: it was not written by "
                        "qsg_jax.io.save, or it was corrupted.") from error
  if meta.get("format") != FORMAT:
    raise ValueError(f"{path} is not a qsg_jax model file (format {meta.get('format')!r}, "
                     f"expected {FORMAT!r}).")
  version = meta.get("format_version")
  if not isinstance(version, int) or version > FORMAT_VERSION:
    raise ValueError(f"{path} has model format version {version!r}, newer than the versions "
                     f"1..{FORMAT_VERSION} this qsg_jax reads (it was written by "
                     f"{meta.get('written_by')}). Upgrade qsg_jax to load it.")
  expected = meta.get("sha256", {})
  for name in sorted(set(expected) | set(arrays)):
    if name not in arrays or name not in expected or _digest(arrays[name]) != expected[name]:
      raise ChecksumError(f"{path}: array {name!r} is missing or differs from the sha256 recorded"
                          " when the file was written (corrupted file). Save the model again.")
  return arrays, meta


def _frozen_from(arrays, meta):
  return FrozenModel(frequencies=arrays["frequencies"], coef=arrays["coef"],
                     scale=arrays["scale"], thresholds=arrays["thresholds"],
                     block_group=int(meta["block_group"]),
                     predict_chunk=int(meta["predict_chunk"]))


def load(path):
  """Reads a model file written by ``save``.

  Args:
    path: file name.

  Returns:
    A ``FrozenModel`` (for a saved ``FitResult`` or ``FrozenModel``), or the fitted estimator
    (parameters that could not be stored, such as a schedule callable, are None: prediction does
    not need them; set them again before refitting).

  Raises:
    FileNotFoundError: no such file.
    qsg_jax.errors.ChecksumError: a truncated or corrupted file.
    ValueError: not a qsg_jax model file, or one of a newer format version.
  """
  arrays, meta = _read(os.fspath(path))
  frozen = _frozen_from(arrays, meta)
  if meta["kind"] == "FrozenModel":
    return frozen
  if meta["kind"] not in _ESTIMATORS:
    raise ValueError(f"{path} holds a {meta['kind']!r}, which this qsg_jax cannot load.")
  cls = getattr(importlib.import_module("qsg_jax.estimators"), meta["kind"])
  not_stored = meta.get("params_not_stored", {})
  if not_stored:   # e.g. a callable step_size: the model is whole, a refit would differ
    warnings.warn(f"{path}: parameters {sorted(not_stored)} could not be stored (not JSON); "
                  "they are back at their defaults, so a refit (clone().fit) would differ. "
                  "Set them again with set_params before refitting.", UserWarning, stacklevel=2)
  estimator = cls(**{name: value for name, value in meta["params"].items()
                     if name not in not_stored})
  estimator.model_ = frozen
  estimator.classes_ = arrays["classes"]
  estimator.input_min_ = arrays["input_min"]
  estimator.input_scale_ = arrays["input_scale"]
  estimator.n_features_in_ = int(arrays["input_min"].shape[0])
  estimator.seed_ = meta["seed"]
  if "feature_names_in" in arrays:
    estimator.feature_names_in_ = arrays["feature_names_in"].astype(object)
  return estimator
