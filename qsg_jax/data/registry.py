"""The dataset registry: ``load(name)`` for real, embedded and synthetic datasets.

Real datasets are read from their original files (see ``catalog.py``), found under ``data_dir``,
``$QSG_JAX_DATA`` or the user cache, else downloaded into the user cache when
``$QSG_JAX_DOWNLOAD`` is not "0". The parsed arrays are cached as ``.npz`` in
``<cache>/parsed/``, keyed by the verified sha256 of the source files (or, for files without a
published checksum, by their path, size and mtime), so a second load skips decompressing,
hashing and parsing.
"""

import dataclasses
import difflib
import hashlib
import json
import os
import pathlib
import tempfile
import time
from typing import Callable

import numpy as np

from qsg_jax.data import catalog
from qsg_jax.data import download as download_lib
from qsg_jax.data import embedded
from qsg_jax.data import files
from qsg_jax.data import synthetic
from qsg_jax.data.dataset import make_dataset

# Bump when a parser changes what it returns, so that stale parsed caches are ignored.
PARSED_FORMAT_VERSION = 1

_ARRAY_FIELDS = ("x", "y", "x_test", "y_test")


@dataclasses.dataclass(frozen=True)
class Entry:
  """A registered dataset: ``loader(data_dir, download, urls, cache) -> Dataset``."""
  name: str
  task: str
  kind: str  # "real" (original files), "embedded" (ships in a package) or "synthetic".
  description: str
  loader: Callable


_REGISTRY = {}
_ALIASES = {
    "cod-rna": "cod_rna", "codrna": "cod_rna", "skin_nonskin": "skin",
    "skin_segmentation": "skin", "bank": "bank_marketing", "accelerometer_gyro": "accelerometer",
    "3d": "road3d", "3d_road": "road3d", "3d_spatial_network": "road3d",
    "yearpredictionmsd": "year", "covtype_binary": "covtype",
}


def register(name, loader, *, task, kind, description=""):
  """Adds a dataset to the registry; ``loader(data_dir, download, urls, cache) -> Dataset``."""
  if name in _REGISTRY:
    raise ValueError(f"a dataset named {name!r} is already registered.")
  _REGISTRY[name] = Entry(name, task, kind, description, loader)


def available(kind=None):
  """Names of the registered datasets (optionally only of one kind: real, embedded, synthetic)."""
  return tuple(name for name, entry in _REGISTRY.items() if kind in (None, entry.kind))


def get_entry(name):
  """The registry ``Entry`` of ``name`` (case-insensitive, '-' and '_' alike, a few aliases).

  Raises:
    ValueError: unknown name; the message lists the available names and close matches.
  """
  if not isinstance(name, str):
    raise TypeError(f"a dataset name must be a string; received {type(name).__name__}.")
  key = name.strip().lower().replace("-", "_")
  key = _ALIASES.get(name.strip().lower(), _ALIASES.get(key, key))
  if key in _REGISTRY:
    return _REGISTRY[key]
  close = difflib.get_close_matches(key, list(_REGISTRY) + list(_ALIASES), n=3, cutoff=0.5)
  hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
  raise ValueError(f"unknown dataset {name!r}.{hint} Available datasets: "
                   f"{', '.join(available())}.")


def load(name, data_dir=None, download=None, *, urls=None, cache=True):
  """Loads a registered dataset by name.

  Args:
    name: one of ``available()`` (e.g. "sgemm", "ijcnn1", "era", "synthetic_ordinal").
    data_dir: folder with the original files (plain or .xz, manifest or flat layout); searched
      before ``$QSG_JAX_DATA`` and the user cache (``$QSG_JAX_CACHE`` or ~/.cache/qsg_jax).
    download: whether to download missing files from the original public source into the user
      cache; default: unless ``$QSG_JAX_DOWNLOAD`` is "0".
    urls: optional {source: base URL} overrides of ``download.DEFAULT_BASE_URLS`` (e.g. a mirror);
      ``$QSG_JAX_URL_UCI`` / ``$QSG_JAX_URL_LIBSVM`` do the same.
    cache: whether to read and write parsed arrays in ``<user cache>/parsed``.

  Every file with a published sha256 is verified on its uncompressed bytes (once per path, size
  and mtime); files without one (covtype, road3d, yolanda, year) are used unverified with a
  logged warning.

  Returns:
    ``Dataset`` (features unscaled; see ``minmax_fit``).

  Raises:
    ValueError: unknown name, or non-finite values in the data.
    files.DataNotFoundError: a file is missing and could not be downloaded.
    files.ChecksumError: a file's content does not match its published sha256.
  """
  return get_entry(name).loader(data_dir, download, urls, cache)


def describe(name):
  """Description of a dataset: source, label mapping, preprocessing and (real data) its files."""
  entry = get_entry(name)
  text = f"{entry.name} ({entry.kind}, {entry.task}): {entry.description}"
  spec = _REAL_SPECS.get(entry.name)
  if spec is not None:
    for f in spec.files:
      sha = f.sha256 or "none published (unverified)"
      text += (f"\n  file {f.subdir}/{f.name}{' (optional)' if f.optional else ''}: sha256 "
               f"{sha}; source {download_lib.describe_source(f)}")
  return text


# --- Real datasets -------------------------------------------------------------------------------

_REAL_SPECS = {spec.name: spec for spec in catalog.REAL_DATASETS}


class _Sources:
  """What a ``RealSpec.build`` reads from: the located paths of its files."""

  def __init__(self, spec, paths, urls):
    self._specs = {f.name: f for f in spec.files}
    self._paths = paths
    self._urls = urls

  def has(self, file_name):
    return file_name in self._paths

  def open(self, file_name):
    f = self._specs[file_name]
    return files.CheckedFile(self._paths[file_name], f.sha256,
                             download_lib.describe_source(f, self._urls))


def _not_found_message(spec, missing, data_dir, urls, error):
  lines = [f"dataset {spec.name!r} needs file(s) that were not found: "
           f"{', '.join(f.name for f in missing)}."]
  for f in missing:
    lines.append(f"Searched for {f.name} (plain, .xz, .bz2 or .gz) at:")
    lines.extend(f"  {p}" for p in files.candidate_paths(f, data_dir)
                 if p.suffix not in (".bz2", ".gz"))
    lines.append(f"Public source: {download_lib.describe_source(f, urls)}")
  if error is None:
    lines.append("Automatic download is off (download=False or QSG_JAX_DOWNLOAD=0).")
    retry = ("or, on a machine with internet access, allow the download (download=True, or unset "
             "QSG_JAX_DOWNLOAD) to fetch them into the user cache")
  else:
    lines.append(f"Downloading failed: {type(error).__name__}: {error}")
    retry = "or retry once the source is reachable"
  lines.append("Fix: fetch the file(s) from the source above and put them (plain or xz-compressed) "
               "under a data directory in the layout <dir>/<subdir>/<file> or <dir>/<file>, then "
               f"pass data_dir=<dir> (--data_dir) or set QSG_JAX_DATA=<dir>; {retry}.")
  return "\n".join(lines)


def _resolve_files(spec, data_dir, download, urls):
  """Paths of the spec's files: found on disk, else downloaded (optional files never are)."""
  if data_dir is not None and not os.path.isdir(data_dir):   # never silently read elsewhere
    raise files.DataNotFoundError(f"data_dir={str(data_dir)!r} is not a directory; pass the "
                                  "folder holding the dataset's files (or leave it unset to use "
                                  "$QSG_JAX_DATA and the user cache).")
  paths, missing = {}, []
  for f in spec.files:
    path = files.locate(f, data_dir)
    if path is not None:
      paths[f.name] = path
    elif not f.optional:
      missing.append(f)
  if missing:
    if not download_lib.download_enabled(download):
      raise files.DataNotFoundError(_not_found_message(spec, missing, data_dir, urls, None))
    files.logger.info("downloading %s for dataset %s into %s", [f.name for f in missing],
                      spec.name, files.user_cache_dir())
    try:
      fetched = download_lib.fetch(missing, urls=urls)
    except files.ChecksumError:
      raise
    except (OSError, ValueError) as e:
      raise files.DataNotFoundError(_not_found_message(spec, missing, data_dir, urls, e)) from e
    paths.update({f.name: path for f, path in fetched.items()})
  return paths


def _parsed_cache_path(spec, paths):
  """Key of the parsed cache, or None while a checksummed file is not verified yet."""
  parts = [spec.name, PARSED_FORMAT_VERSION]
  for f in spec.files:
    path = paths.get(f.name)
    if path is None:
      parts.append(None)
    elif f.sha256 is not None:
      if files.verified_sha256(path) != f.sha256:
        return None
      parts.append(f.sha256)
    else:
      stat = os.stat(path)
      parts.append([str(pathlib.Path(path).resolve()), stat.st_size, stat.st_mtime_ns])
  digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]
  return files.user_cache_dir() / "parsed" / f"{spec.name}-{digest}.npz"


def _read_parsed(path):
  """Arrays of a parsed-cache file, or None (and the file removed) if it is unreadable."""
  try:
    with np.load(path, allow_pickle=False) as z:
      arrays = {k: z[k] for k in z.files}
    if not {"x", "y", "feature_names"} <= set(arrays):
      raise KeyError(f"missing arrays; it holds {sorted(arrays)}")
    arrays["feature_names"] = tuple(arrays["feature_names"].tolist())
  except (OSError, ValueError, KeyError, EOFError) as e:
    files.logger.warning("ignoring the unreadable parsed cache %s (%s)", path, e)
    files.remove_quietly(path)
    return None
  return arrays


def _write_parsed(path, arrays):
  """Writes the parsed arrays atomically, replacing older cache files of the same dataset."""
  try:
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(path.name.rsplit("-", 1)[0] + "-*.npz"):
      files.remove_quietly(stale)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".npz")
    with os.fdopen(fd, "wb") as f:
      np.savez(f, feature_names=np.asarray(arrays["feature_names"], dtype=str),
               **{k: arrays[k] for k in _ARRAY_FIELDS if arrays.get(k) is not None})
    os.replace(tmp, path)
  except OSError as e:
    files.logger.warning("could not write the parsed cache %s (%s); the next load parses again.",
                         path, e)


def load_real(spec, data_dir=None, download=None, urls=None, cache=True):
  """Loads a ``catalog.RealSpec``: locate or download, verify, parse (or read the parsed cache)."""
  paths = _resolve_files(spec, data_dir, download, urls)
  for f in spec.files:
    if f.sha256 is None and f.name in paths:
      files.logger.warning("%s: no published sha256 for %s; it is used unverified.", spec.name,
                           paths[f.name])
  cache_path = _parsed_cache_path(spec, paths) if cache else None
  arrays = _read_parsed(cache_path) if cache_path is not None and cache_path.is_file() else None
  if arrays is None:
    start = time.perf_counter()
    arrays = spec.build(_Sources(spec, paths, urls))
    files.logger.info("parsed %s in %.1f s", spec.name, time.perf_counter() - start)
    cache_path = _parsed_cache_path(spec, paths) if cache else None
    if cache_path is not None:
      _write_parsed(cache_path, arrays)
  where = ", ".join(str(paths[f.name]) for f in spec.files if f.name in paths)
  return make_dataset(spec.name, spec.task, arrays["x"], arrays["y"],
                      x_test=arrays.get("x_test"), y_test=arrays.get("y_test"),
                      feature_names=arrays["feature_names"], num_classes=spec.num_classes,
                      description=f"{spec.description} Files: {where}.")


def _real_loader(spec):
  return lambda data_dir, download, urls, cache: load_real(spec, data_dir, download, urls, cache)


for _spec in catalog.REAL_DATASETS:
  register(_spec.name, _real_loader(_spec), task=_spec.task, kind="real",
           description=_spec.description)

for _name, (_, _text) in embedded.SKORDINAL_SETS.items():
  register(_name, (lambda n: lambda *_: embedded.load_skordinal(n))(_name), task="ordinal",
           kind="embedded", description=_text + " Shipped in skordinal.")
register("breast_cancer", lambda *_: embedded.load_breast_cancer(), task="binary",
         kind="embedded", description="Wisconsin breast cancer (scikit-learn); 1 = malignant.")
register("synthetic_ordinal", lambda *_: synthetic.make_ordinal(0), task="ordinal",
         kind="synthetic", description="x ~ N(0, I_8), 5 classes cut from f*(x) + noise, 20,000 "
                                       "train + 10,000 test points, seed 0; known Bayes score.")
register("synthetic_binary", lambda *_: synthetic.make_binary(0), task="binary",
         kind="synthetic", description="k = 2 case of synthetic_ordinal, about 30% positives, "
                                       "20,000 train + 10,000 test points, seed 0.")
