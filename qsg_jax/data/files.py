"""Finding, opening and checksumming the original data files (plain, .xz, .bz2 or .gz).

A data file is described by a ``FileSpec`` (its original name, the manifest's subfolder, the
sha256 of its uncompressed bytes and where to download it). ``locate`` searches, in order:
``data_dir`` (the argument), ``$QSG_JAX_DATA``, then the user cache (``$QSG_JAX_CACHE``, default
``~/.cache/qsg_jax``), each in the manifest layout (``sgemm/sgemm_product.csv.xz``) and flat
(``sgemm_product.csv.xz``). ``CheckedFile`` streams the uncompressed bytes through sha256 while a
parser reads them, so a file is decompressed and read once; a verified (path, size, mtime) is
remembered in ``<cache>/verified.json`` so that later loads do not hash again (a file changed in
place keeps neither its size nor its mtime, so it is hashed again).
"""

import bz2
import dataclasses
import gzip
import hashlib
import io
import json
import logging
import lzma
import os
import pathlib
import tempfile
from typing import Optional

from qsg_jax.errors import ChecksumError
from qsg_jax.errors import DataNotFoundError

logger = logging.getLogger("qsg_jax.data")

# Suffixes tried after the plain name, with the opener of their uncompressed byte stream.
COMPRESSED_SUFFIXES = {".xz": lzma.open, ".bz2": bz2.open, ".gz": gzip.open}

_CHUNK = 1 << 20
# What a truncated or damaged .xz/.bz2/.gz raises while decompressing.
_DECOMPRESSION_ERRORS = (EOFError, lzma.LZMAError, OSError)


@dataclasses.dataclass(frozen=True)
class FileSpec:
  """One original data file.

  Attributes:
    name: file name as published (``sgemm_product.csv``).
    subdir: folder of the manifest layout (``sgemm``).
    sha256: hex sha256 of the uncompressed bytes, or None when no checksum is published.
    source: key of the download base URL (``"uci"``, ``"libsvm"``, ...), see ``download.py``.
    path: path of the download below that base URL.
    container: how the download wraps the file: None (plain), ``"bz2"`` or ``"zip"``.
    member: name of the file inside a zip container (default: ``name``).
    optional: whether a dataset loads without it (e.g. an official test split).
  """
  name: str
  subdir: str
  sha256: Optional[str]
  source: str
  path: str
  container: Optional[str] = None
  member: Optional[str] = None
  optional: bool = False


def user_cache_dir():
  """The user cache: ``$QSG_JAX_CACHE`` or ``~/.cache/qsg_jax`` (not created here)."""
  env = os.environ.get("QSG_JAX_CACHE")
  return pathlib.Path(env).expanduser() if env else pathlib.Path.home() / ".cache" / "qsg_jax"


def search_roots(data_dir=None):
  """Directories searched for data files, in order of precedence (existing or not)."""
  roots = []
  if data_dir is not None:
    roots.append(pathlib.Path(data_dir).expanduser())
  env = os.environ.get("QSG_JAX_DATA")
  if env:
    roots.append(pathlib.Path(env).expanduser())
  roots.append(user_cache_dir())
  unique = []
  for root in roots:
    if root not in unique:
      unique.append(root)
  return unique


def candidate_paths(spec, data_dir=None):
  """Every path where ``spec`` may lie: per root, manifest layout then flat, plain then packed."""
  names = [spec.name] + [spec.name + suffix for suffix in COMPRESSED_SUFFIXES]
  paths = []
  for root in search_roots(data_dir):
    for folder in (root / spec.subdir, root):
      paths.extend(folder / name for name in names)
  return paths


def locate(spec, data_dir=None):
  """Returns the first existing candidate path of ``spec``, or None."""
  for path in candidate_paths(spec, data_dir):
    if path.is_file():
      return path
  return None


def open_uncompressed(path):
  """Binary stream of the uncompressed bytes of ``path`` (by suffix: .xz, .bz2, .gz or plain)."""
  path = pathlib.Path(path)
  opener = COMPRESSED_SUFFIXES.get(path.suffix)
  return opener(path, "rb") if opener else open(path, "rb")


class HashingReader(io.RawIOBase):
  """Read-only raw stream that feeds every byte it passes on into a sha256."""

  def __init__(self, stream):
    super().__init__()
    self._stream = stream
    self._hash = hashlib.sha256()

  def readable(self):
    return True

  def readinto(self, buffer):
    data = self._stream.read(len(buffer))
    n = len(data)
    buffer[:n] = data
    self._hash.update(data)
    return n

  def hexdigest_of_all(self):
    """Reads what the parser left unread, then returns the sha256 of the whole stream."""
    while True:
      data = self._stream.read(_CHUNK)
      if not data:
        return self._hash.hexdigest()
      self._hash.update(data)

  def close(self):
    self._stream.close()
    super().close()


def checksum_message(path, expected, actual, url=None):
  """Error text for a sha256 mismatch: the file, both hashes and the fix."""
  return (f"sha256 mismatch for {path}: the uncompressed content has sha256 {actual}, expected "
          f"{expected}. The file is corrupt, truncated or a different version. {fix_text(url)}")


def sha256_of_file(path):
  """sha256 of the uncompressed bytes of ``path``, streamed in 1 MiB chunks."""
  with open_uncompressed(path) as stream:
    reader = HashingReader(stream)
    return reader.hexdigest_of_all()


# ------------------------------------------------------------------------------------------------
# Verification cache: {resolved path: {"size", "mtime_ns", "sha256"}} in <cache>/verified.json.


def _fingerprint(path):
  stat = os.stat(path)
  return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _verified_db_path():
  return user_cache_dir() / "verified.json"


def _read_verified_db():
  try:
    with open(_verified_db_path(), encoding="utf-8") as f:
      db = json.load(f)
    return db if isinstance(db, dict) else {}
  except (OSError, ValueError):
    return {}


def verified_sha256(path):
  """The sha256 recorded for ``path`` if its size and mtime are unchanged since, else None."""
  entry = _read_verified_db().get(str(pathlib.Path(path).resolve()))
  if entry and all(entry.get(k) == v for k, v in _fingerprint(path).items()):
    return entry.get("sha256")
  return None


def record_verified(path, sha256):
  """Remembers that ``path`` (at its current size and mtime) has uncompressed sha256 ``sha256``."""
  db = _read_verified_db()
  db[str(pathlib.Path(path).resolve())] = dict(_fingerprint(path), sha256=sha256)
  try:
    atomic_write_text(_verified_db_path(), json.dumps(db, indent=1, sort_keys=True))
  except OSError as e:
    logger.warning("could not write the verification cache %s (%s); files will be hashed again "
                   "on the next load.", _verified_db_path(), e)


def atomic_write_text(path, text):
  """Writes ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
  try:
    with os.fdopen(fd, "w", encoding="utf-8") as f:
      f.write(text)
    os.replace(tmp, path)
  except BaseException:
    remove_quietly(tmp)
    raise


def remove_quietly(path):
  """Deletes ``path`` if it exists; errors are ignored (used to clean up temporary files)."""
  try:
    os.remove(path)
  except OSError:
    pass


class CheckedFile:
  """Context manager giving a parser the uncompressed binary stream of a file, checked on exit.

  If the file's sha256 is known and not yet verified, the bytes are hashed as the parser reads
  them; on a clean exit the rest is drained and the digest compared (``ChecksumError`` on a
  mismatch). If the parser fails, or the compressed container is truncated, a checksum mismatch
  is reported in preference to the parse error, since it names the real cause.

  Attributes:
    stream: buffered binary stream of the uncompressed bytes.
  """

  def __init__(self, path, expected_sha256, url=None):
    self.path = pathlib.Path(path)
    self.expected = expected_sha256
    self.url = url
    self.stream = None
    self._reader = None

  def __enter__(self):
    raw = open_uncompressed(self.path)
    must_hash = self.expected is not None and verified_sha256(self.path) != self.expected
    if must_hash:
      self._reader = HashingReader(raw)
      self.stream = io.BufferedReader(self._reader, buffer_size=_CHUNK)
    else:
      self.stream = raw
    return self

  def __exit__(self, exc_type, exc, tb):
    try:
      if self._reader is not None:
        try:
          actual = self._reader.hexdigest_of_all()
        except _DECOMPRESSION_ERRORS as e:
          raise ChecksumError(self._truncated_message(e)) from e
        if actual != self.expected:
          raise ChecksumError(checksum_message(self.path, self.expected, actual, self.url)) from exc
        if exc_type is None:
          record_verified(self.path, actual)
      elif isinstance(exc, _DECOMPRESSION_ERRORS):
        raise ChecksumError(self._truncated_message(exc)) from exc
      return False
    finally:
      self.stream.close()

  def _truncated_message(self, error):
    expected = f" (expected uncompressed sha256 {self.expected})" if self.expected else ""
    return (f"{self.path} could not be decompressed to the end ({error}): the compressed file is "
            f"truncated or corrupt{expected}. {fix_text(self.url)}")


def fix_text(url):
  """The remedy for a corrupt file, naming its public source when known."""
  return (f"Delete it and copy it again from the original (public source: {url}), or delete it "
          "and let qsg_jax.data.load download it into the user cache." if url
          else "Delete it and copy it again from the original.")
