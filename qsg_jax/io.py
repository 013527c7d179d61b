"""Model files that predict identically anywhere: ``freeze``, ``save`` and ``load``.

A trained model regenerates its feature frequencies from a PRNG key, and what a key generates
depends on JAX's PRNG implementation, its ``jax_threefry_partitionable`` flag and JAX's version:
a model reloaded under another setting would predict differently without a word. A model file
therefore stores the frequencies themselves ([T, m, d] float32: 1.75 MiB for the sgemm defaults
T = 1024, m = 32, d = 14; the whole file is about 2.0 MiB). That costs T m d floats instead of two
integers, and buys predictions that no PRNG setting or JAX upgrade can change.

``freeze(result)`` is a ``FrozenModel`` (NumPy arrays only, so it pickles); ``frozen_scores``
scores through the stored frequencies with the same blocked computation as
``engine.model_scores``. A direct fit (``qsg_jax.fit(..., solver="direct")``) is a kernel
expansion over its Nystrom landmarks, which need no PRNG at all: it freezes to a
``FrozenNystrom`` (landmarks, coefficients, sigma, thresholds), scored by the same function as
``qsg_jax.decision_function``. The estimators predict through a frozen model too, so a fitted
estimator, its pickle and its model file give bit-identical predictions.

The file is a plain ``.npz`` (no pickle: loading never runs code) holding a flat pytree of
arrays and one JSON metadata entry: the format name and version, the kind of object, what it
needs besides arrays (``model_kind``: "fourier", or "nystrom"), the versions that wrote it, the
sha256 of every array and of the metadata itself, so that a truncated, corrupted or edited file
is refused rather than misread. ``io`` knows arrays and metadata only: a class whose objects
are saved (the estimators) registers itself with ``register`` and provides ``_to_arrays()``
-> (arrays, metadata) and the classmethod ``_from_arrays(model, arrays, metadata)``. A schedule
callable is never stored: prediction does not need it.

    qsg_jax.io.save(result, "model.npz")   # a FitResult, frozen model, QS3ORAO or QSGS2AUC
    model = qsg_jax.io.load("model.npz")   # a FrozenModel / FrozenNystrom, or the estimator
"""

import functools
import hashlib
import json
import os
import tempfile
import zipfile
from typing import Any, NamedTuple, Optional, Tuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _fit
from qsg_jax import _validation as validation
from qsg_jax import direct
from qsg_jax import numerics
from qsg_jax import thresholds as thresholds_lib
from qsg_jax._version import __version__
from qsg_jax.engine import features
from qsg_jax.engine import scoring
from qsg_jax.errors import ChecksumError

FORMAT = "qsg_jax-model"
# 2: the metadata is covered by a checksum too. Version 1 files (no metadata checksum) load with
# their metadata checked for range instead. 3: Nystrom models (metadata "model_kind"); Fourier
# models are still written as version 2, which older readers load (a file without "model_kind"
# holds a Fourier model).
FORMAT_VERSION = 3
FOURIER_FORMAT_VERSION = 2
# Classes whose fitted objects ``save`` / ``load`` handle, by name (``register``).
_CLASSES = {}


def register(cls):
  """Class decorator: ``save`` stores ``obj._to_arrays()`` and ``load`` restores the file with
  ``cls._from_arrays(frozen_model, arrays, metadata)``; returns ``cls``."""
  _CLASSES[cls.__name__] = cls
  return cls


class FrozenModel(NamedTuple):
  """What prediction needs, frequencies included: f(x) = scale * sum_j coef_j . phi_j(x)."""
  frequencies: np.ndarray  # [T, m, d] float32, Omega_j of every block (already times
                           # sqrt(2 sigma)).
  coef: np.ndarray         # [T, 2m] float32, stored coefficients.
  scale: np.ndarray        # float32 scalar.
  thresholds: np.ndarray   # [k-1] float32 ordered thresholds on f.
  block_group: int         # feature blocks per matrix product (as in training).
  predict_chunk: int       # points per matrix product.
  feature_names: Optional[Tuple[str, ...]] = None  # the training frame's column names, or None.
  training_box: Optional[np.ndarray] = None  # [2, d] float32 column minima and maxima of the
                           # training points (files before it: None, far rows not looked at).
  sigma: Optional[np.ndarray] = None  # float32 scalar kernel parameter (older files: None).

  def decision_function(self, x) -> np.ndarray:
    """Checked ranking scores f(x): [n] float32 for x [n, d]."""
    x = validation.check_points("x", x, dim=self.frequencies.shape[2],
                                columns=self.feature_names)
    return frozen_scores(self, check_phases(self, x))

  def predict(self, x) -> np.ndarray:
    """Ordinal classes 0..k-1 (number of thresholds below f(x)): [n] int32."""
    scores = jnp.asarray(self.decision_function(x))
    return np.asarray(thresholds_lib.predict_classes(scores, jnp.asarray(self.thresholds)))


class FrozenNystrom(NamedTuple):
  """What a direct (Nystrom) model's prediction needs: f(x) = sum_b coef_b k(x, z_b)."""
  landmarks: np.ndarray    # [p, d] float32 landmarks z_b.
  coef: np.ndarray         # [p] float32 kernel-expansion coefficients.
  sigma: np.ndarray        # float32 scalar, k(x, z) = exp(-sigma ||x - z||^2).
  thresholds: np.ndarray   # [k-1] float32 ordered thresholds on f.
  feature_names: Optional[Tuple[str, ...]] = None  # the training frame's column names, or None.

  def decision_function(self, x) -> np.ndarray:
    """Checked ranking scores f(x): [n] float32 for x [n, d]."""
    x = validation.check_points("x", x, dim=self.landmarks.shape[1], kernel=True,
                                columns=self.feature_names)
    return frozen_scores(self, check_phases(self, x))   # (rows beyond the kernel's reach warn)

  def predict(self, x) -> np.ndarray:
    """Ordinal classes 0..k-1 (number of thresholds below f(x)): [n] int32."""
    scores = jnp.asarray(self.decision_function(x))
    return np.asarray(thresholds_lib.predict_classes(scores, jnp.asarray(self.thresholds)))


Frozen = Union[FrozenModel, FrozenNystrom]
_NYSTROM_ARRAYS = ("landmarks", "coef", "sigma", "thresholds")   # FrozenNystrom's arrays


def input_dim(model: Frozen) -> int:
  """d, the number of input features a frozen model takes."""
  return int((model.landmarks if isinstance(model, FrozenNystrom) else model.frequencies)
             .shape[-1])


def check_phases(model: FrozenModel, x, name="x", units=None):
  """Returns ``x`` after checking every phase omega . x stays within ``numerics.MAX_PHASE``.

  |omega . x| <= max ||omega|| max ||x|| (Cauchy-Schwarz) over the stored frequencies; past
  2^19 a float32 phase has lost its precision and the features would be NaN.

  Rows beyond the kernel's reach of the training data warn (``UnscaledFeaturesWarning``, values
  shown through ``units``): a ``FrozenNystrom``'s landmarks, a ``FrozenModel``'s training box
  (when its file has one).

  Raises:
    ValueError: points too large for the model's frequencies, with what to change.
  """
  arr = np.asarray(x)
  if isinstance(model, FrozenNystrom):
    validation.warn_if_out_of_reach(model.landmarks, model.sigma, arr, name, units,
                                    of="the landmarks")
  elif arr.size:
    norm = float(np.sqrt(np.max(np.sum(np.square(arr, dtype=np.float64), axis=1))))
    largest = float(np.sqrt(np.max(np.sum(np.square(model.frequencies, dtype=np.float64), -1))))
    if norm * largest > numerics.MAX_PHASE:
      raise ValueError(
          f"{name} has a point of norm {norm:.3g}; with frequencies of norm up to "
          f"{largest:.3g} its Fourier phases can reach {norm * largest:.3g}, beyond "
          f"{numerics.MAX_PHASE:.0f} where float32 phases lose their precision. Pass points "
          "preprocessed like the training data (same scaling).")
    if model.training_box is not None and model.sigma is not None:   # (older files: neither)
      validation.warn_if_out_of_reach(model.training_box, float(model.sigma), arr, name, units,
                                      fourier=True)
  return arr


def freeze(result: _fit.FitResult) -> Frozen:
  """The frozen model of a ``FitResult``: DSG's frequencies regenerated once, under the current
  PRNG configuration (the one that trained it), and stored; a direct fit's landmarks.

  Args:
    result: ``FitResult`` from ``qsg_jax.fit`` (either solver).

  Returns:
    ``FrozenModel`` (Fourier features) or ``FrozenNystrom`` (a direct fit) of NumPy arrays;
    ``frozen_scores`` equals ``qsg_jax.decision_function``.

  Raises:
    ValueError: a fit with per-split corrections (``split_lam``): they are not stored.
  """
  if not isinstance(result, _fit.FitResult):
    raise TypeError(f"freeze needs the FitResult of qsg_jax.fit; received "
                    f"{type(result).__name__}.")
  model, config = result.model, result.config
  if model.split_coef is not None:
    raise ValueError("model files store the shared ranking function f only, not the per-split "
                     "corrections g_j of a fit with split_lam: refit with split_lam=None to save "
                     "it, or keep the FitResult (qsg_jax.split_scores scores its splits).")
  if isinstance(model, direct.NystromModel):
    return FrozenNystrom(landmarks=np.asarray(model.landmarks, np.float32),
                         coef=np.asarray(model.coef, np.float32),
                         sigma=np.asarray(model.sigma, np.float32),
                         thresholds=np.asarray(result.thresholds, np.float32),
                         feature_names=result.feature_names)
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
      block_group=int(config.block_group), predict_chunk=int(config.predict_chunk),
      feature_names=result.feature_names, training_box=result.training_box,
      sigma=np.asarray(model.sigma, np.float32))


_frequencies = jax.jit(features.sample_frequency_blocks, static_argnums=(2, 3))


@functools.partial(jax.jit, static_argnames=("block_group", "predict_chunk"))
def _scores(frequencies, coef, scale, x, block_group, predict_chunk):
  """``engine.model_scores`` with the frequencies read instead of regenerated."""
  d = frequencies.shape[2]
  return scale * scoring.chunked_block_sums(
      lambda blocks: frequencies[blocks].reshape(-1, d), coef, x, block_group, predict_chunk)


def frozen_scores(model: Frozen, x) -> np.ndarray:
  """Scores f(x) of a frozen model (unchecked; see ``FrozenModel.decision_function``).

  Args:
    model: ``FrozenModel`` or ``FrozenNystrom``.
    x: [n, d] float32 points.

  Returns:
    [n] float32 scores.
  """
  if isinstance(model, FrozenNystrom):   # the scoring of qsg_jax.decision_function
    return direct.solver.scores(direct.NystromModel(*jax.device_put(
        (model.landmarks, model.coef, model.sigma))), x)   # (jnp.asarray compiles per shape)
  frequencies, coef, scale = jax.device_put((model.frequencies, model.coef, model.scale))
  return numerics.in_row_buckets(
      lambda part: _scores(frequencies, coef, scale, part, model.block_group, model.predict_chunk),
      np.asarray(x, np.float32), model.predict_chunk)


def frozen_arrays(model: Frozen):
  """(arrays, metadata) of a frozen model: what every model file holds (the column names, when
  it has them, in the metadata)."""
  names = {} if model.feature_names is None else {"feature_names": list(model.feature_names)}
  if isinstance(model, FrozenNystrom):
    return ({name: np.asarray(getattr(model, name)) for name in _NYSTROM_ARRAYS},
            {"model_kind": "nystrom", **names})
  arrays = {name: np.asarray(getattr(model, name))
            for name in ("frequencies", "coef", "scale", "thresholds", "training_box", "sigma")
            if getattr(model, name) is not None}
  return arrays, {"model_kind": "fourier", "block_group": model.block_group,
                  "predict_chunk": model.predict_chunk, **names}


def _digest(array: np.ndarray) -> str:
  header = f"{array.dtype.str}{array.shape}".encode()
  return hashlib.sha256(header + np.ascontiguousarray(array).tobytes()).hexdigest()


def _meta_digest(meta: dict) -> str:
  return hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()


def plain_array(name, value):
  """``value`` as an array that ``np.load`` reads without pickle (object arrays of str become
  unicode arrays), else a clear error."""
  array = np.asarray(value)
  if array.dtype == object:
    if all(isinstance(v, str) for v in array.ravel()):
      return array.astype(str)
    raise TypeError(f"cannot store {name} of dtype object ({array.ravel()[:3].tolist()}...) "
                    "without pickle; use numeric or string labels.")
  return array


def save(model: Any, path) -> None:
  """Writes a model file (atomically: a temporary file renamed into place).

  Args:
    model: a ``FitResult`` (either solver), a ``FrozenModel`` / ``FrozenNystrom``, or a fitted
      registered estimator (``QS3ORAO``, ``QSGS2AUC``).
    path: file name (written as given; ``.npz`` is a good suffix).

  Raises:
    TypeError: another kind of object, or labels that cannot be stored without pickle.
    sklearn.exceptions.NotFittedError: an estimator that was not fitted.
  """
  kind = type(model).__name__
  if isinstance(model, _fit.FitResult):
    model = freeze(model)
    kind = type(model).__name__
  if isinstance(model, (FrozenModel, FrozenNystrom)):
    arrays, meta = frozen_arrays(model)
  elif _CLASSES.get(kind) is type(model):
    arrays, meta = model._to_arrays()   # pylint: disable=protected-access
  else:
    raise TypeError(f"save takes a FitResult, a FrozenModel, a FrozenNystrom or a fitted "
                    f"{' / '.join(sorted(_CLASSES))}; received {kind}. Other objects: use "
                    "pickle.")
  version = FORMAT_VERSION if meta.get("model_kind") == "nystrom" else FOURIER_FORMAT_VERSION
  meta.update(format=FORMAT, format_version=version, kind=kind,
              written_by={"qsg_jax": __version__, "jax": jax.__version__,
                          "numpy": np.__version__},
              sha256={name: _digest(array) for name, array in arrays.items()})
  meta["metadata_sha256"] = _meta_digest(meta)
  arrays["metadata"] = np.asarray(json.dumps(meta, sort_keys=True))
  path = _file_name(path)
  folder = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(folder):
    raise FileNotFoundError(f"cannot save to {path!r}: its folder {folder!r} does not "
                            "exist; create it first (os.makedirs).")
  if os.path.isdir(path) or path.endswith(os.sep):
    raise IsADirectoryError(f"cannot save to {path!r}: it is a directory; pass a file name, e.g. "
                            f"{os.path.join(path, 'model.npz')!r}.")
  try:
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".npz")
  except OSError as e:
    raise PermissionError(f"cannot save to {path!r}: its folder {folder!r} is not writable "
                          f"({e.strerror}).") from None
  try:
    with os.fdopen(handle, "wb") as file:
      np.savez(file, **arrays)
    os.replace(temporary, path)
  except BaseException:
    os.unlink(temporary)
    raise


def _file_name(path) -> str:
  """A str file name from a str, bytes or os.PathLike ``path``; the empty name refused."""
  try:
    path = os.fsdecode(path)
  except TypeError:
    raise TypeError(f"path must be a file name (str, bytes or os.PathLike); received "
                    f"{type(path).__name__} {path!r:.60}.") from None
  if not path:
    raise ValueError("path is empty; pass a file name, e.g. 'model.npz'.")
  return path


def _read(path):
  """(arrays, metadata) of a model file, refusing anything that is not one written intact."""
  if os.path.isdir(path):
    raise IsADirectoryError(f"{path} is a directory; pass the model file written by "
                            "qsg_jax.io.save (e.g. os.path.join(folder, 'model.npz')).")
  with open(path, "rb") as file:   # FileNotFoundError: no such file
    start = file.read(64)
  if start and not start.startswith(b"PK"):   # not a zip archive, not even a truncated one
    looks = " (it looks like JSON or text)" if all(32 <= c < 127 or c in b"\r\n\t"
                                                   for c in start) else ""
    raise ValueError(f"{path} is not a qsg_jax model file{looks}: model files are .npz archives "
                     "written by qsg_jax.io.save. Save the model with qsg_jax.io.save(model, "
                     "path).")
  try:
    with open(path, "rb") as file, np.load(file, allow_pickle=False) as contents:
      arrays = {name: contents[name] for name in contents.files}
  except (zipfile.BadZipFile, EOFError, ValueError, OSError, KeyError) as error:
    raise ChecksumError(
        f"{path} is not a readable qsg_jax model file (truncated or corrupted?): "
        f"{type(error).__name__}: {str(error)[:200]}. Save the model again with "
        "qsg_jax.io.save.") from error
  try:
    meta = json.loads(str(arrays.pop("metadata")))
    recorded = meta.pop("metadata_sha256", None) if isinstance(meta, dict) else None
  except (KeyError, ValueError) as error:
    raise ChecksumError(f"{path} has no readable metadata entry: it was not written by "
                        "qsg_jax.io.save, or it was corrupted.") from error
  if not isinstance(meta, dict) or meta.get("format") != FORMAT:
    raise ValueError(f"{path} is not a qsg_jax model file (format "
                     f"{meta.get('format') if isinstance(meta, dict) else None!r}, expected "
                     f"{FORMAT!r}).")
  version = meta.get("format_version")
  if type(version) is not int or not 1 <= version <= FORMAT_VERSION:   # bool, str: refused
    raise ValueError(f"{path} has model format version {version!r}; this qsg_jax "
                     f"({__version__}) reads versions 1..{FORMAT_VERSION} (the file was written "
                     f"by {meta.get('written_by')}). Upgrade qsg_jax to load a newer file.")
  if (version >= 2 or recorded is not None) and recorded != _meta_digest(meta):
    raise ChecksumError(f"{path}: its metadata (kind, block_group, parameters, ...) differs from "
                        "the sha256 recorded when the file was written (edited or corrupted "
                        "file). Save the model again.")
  expected = meta.get("sha256", {})
  for name in sorted(set(expected) | set(arrays)):
    if name not in arrays or name not in expected or _digest(arrays[name]) != expected[name]:
      raise ChecksumError(f"{path}: array {name!r} is missing or differs from the sha256 recorded"
                          " when the file was written (corrupted file). Save the model again.")
  return arrays, meta


def load(path):
  """Reads a model file written by ``save``.

  Args:
    path: file name.

  Returns:
    A ``FrozenModel`` or ``FrozenNystrom`` (for a saved ``FitResult`` of DSG or of the direct
    solver, or a frozen model), or the fitted estimator (its class restores itself:
    ``register``).

  Raises:
    FileNotFoundError: no such file (IsADirectoryError: a directory).
    qsg_jax.errors.ChecksumError: a truncated, corrupted or edited file.
    ValueError: not a qsg_jax model file, or one of a newer format version.
  """
  path = _file_name(path)
  arrays, meta = _read(path)
  model_kind = meta.get("model_kind", "fourier")   # files before version 3 hold Fourier models
  if model_kind == "nystrom":
    frozen = _frozen_nystrom(path, arrays)
  elif model_kind == "fourier":
    frozen = _frozen_fourier(path, arrays, meta)
  else:
    raise ChecksumError(f"{path}: unknown model_kind {model_kind!r} (edited or corrupted "
                        "metadata); this qsg_jax reads 'fourier' and 'nystrom' models.")
  names = meta.get("feature_names")
  if names is not None:
    if not (isinstance(names, list) and len(names) == input_dim(frozen) and all(
        isinstance(n, str) for n in names)):
      raise ChecksumError(f"{path}: feature_names is not a list of {input_dim(frozen)} names "
                          "(edited or corrupted metadata).")
    frozen = frozen._replace(feature_names=tuple(names))
  if meta["kind"] in ("FrozenModel", "FrozenNystrom"):
    return frozen
  if meta["kind"] not in _CLASSES:
    raise ValueError(f"{path} holds a {meta['kind']!r}, which this qsg_jax cannot load (it loads "
                     f"FrozenModel, {', '.join(sorted(_CLASSES))}).")
  return _CLASSES[meta["kind"]]._from_arrays(frozen, arrays, meta)  # pylint: disable=W0212


def _frozen_fourier(path, arrays, meta) -> FrozenModel:
  """The ``FrozenModel`` of a file's arrays, its metadata checked."""
  block_group, predict_chunk = meta.get("block_group"), meta.get("predict_chunk")
  frozen = FrozenModel(
      frequencies=arrays["frequencies"], coef=arrays["coef"], scale=arrays["scale"],
      thresholds=arrays["thresholds"],
      block_group=validation.check_count("block_group", block_group,
                                         fix=f"{path}: edited or corrupted metadata."),
      predict_chunk=validation.check_count("predict_chunk", predict_chunk,
                                           fix=f"{path}: edited or corrupted metadata."))
  box = arrays.get("training_box")   # (older files have none)
  if box is not None and box.shape != (2, frozen.frequencies.shape[-1]):
    raise ChecksumError(f"{path}: training_box has shape {box.shape}, not (2, "
                        f"{frozen.frequencies.shape[-1]}) (edited or corrupted file).")
  sigma = arrays.get("sigma")
  if sigma is not None and sigma.shape != ():
    raise ChecksumError(f"{path}: sigma has shape {sigma.shape}, not () (edited or corrupted "
                        "file).")
  frozen = frozen._replace(training_box=box, sigma=sigma)
  if frozen.coef.shape[0] % frozen.block_group:
    raise ChecksumError(f"{path}: block_group={frozen.block_group} does not divide the "
                        f"{frozen.coef.shape[0]} feature blocks (edited or corrupted metadata).")
  return frozen


def _frozen_nystrom(path, arrays) -> FrozenNystrom:
  """The ``FrozenNystrom`` of a file's arrays, their shapes checked."""
  names = _NYSTROM_ARRAYS
  missing = [name for name in names if name not in arrays]
  landmarks = arrays.get("landmarks")
  if missing or landmarks.ndim != 2 or arrays["coef"].shape != landmarks.shape[:1] or (
      arrays["sigma"].shape != () or arrays["thresholds"].ndim != 1):
    raise ChecksumError(f"{path}: the arrays of its Nystrom model are missing ({missing}) or "
                        "have inconsistent shapes (edited or corrupted file). Save it again.")
  return FrozenNystrom(**{name: arrays[name] for name in names})
