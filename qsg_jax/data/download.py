"""Downloading original data files from their public sources into the user cache, atomically.

Each ``FileSpec`` names a source key and a path below that source's base URL. The base URLs
default to the public repositories (``DEFAULT_BASE_URLS``) and can be overridden per call
(``urls={"uci": "http://127.0.0.1:8000/"}``) or per environment (``QSG_JAX_URL_UCI=...``), which
is how the tests serve fixtures from a local HTTP server without touching the internet.

The transfer is pooch's (``pooch.retrieve``: streamed into a temporary file, moved into place
when complete). Our published checksums are of the uncompressed files, not of the zip or bz2
containers pooch downloads, so the file is then extracted, hashed on the way into a temporary
file in the destination folder, and moved into place with ``os.replace`` only if its sha256
matches; a failed or corrupt download leaves nothing behind.
"""

import bz2
import contextlib
import hashlib
import logging
import os
import pathlib
import tempfile
import zipfile
import zlib

import pooch

from qsg_jax.data import files
from qsg_jax.errors import DownloadError

DEFAULT_BASE_URLS = {
    "uci": "https://archive.ics.uci.edu/",
    "libsvm": "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/",
    "codalab": "https://competitions.codalab.org/",
}

_CHUNK = 1 << 20
_TIMEOUT_S = 60
# What a damaged container raises while it is read.
_CONTAINER_ERRORS = (EOFError, OSError, zlib.error, zipfile.BadZipFile)


def download_enabled(download=None):
  """Whether to try downloading: ``download`` if given, else ``$QSG_JAX_DOWNLOAD != "0"``."""
  if download is not None:
    return bool(download)
  return os.environ.get("QSG_JAX_DOWNLOAD", "1").strip() != "0"


def base_url(source, urls=None):
  """Base URL of ``source``: ``urls[source]``, else ``$QSG_JAX_URL_<SOURCE>``, else the default."""
  if urls and source in urls:
    return urls[source]
  env = os.environ.get(f"QSG_JAX_URL_{source.upper()}")
  if env:
    return env
  if source not in DEFAULT_BASE_URLS:
    raise ValueError(f"unknown download source {source!r}; known: {sorted(DEFAULT_BASE_URLS)}.")
  return DEFAULT_BASE_URLS[source]


def file_url(spec, urls=None):
  """Full URL of the download that contains ``spec`` (the file itself or its container)."""
  return base_url(spec.source, urls).rstrip("/") + "/" + spec.path.lstrip("/")


def describe_source(spec, urls=None):
  """Human-readable origin: the URL, plus the container member when there is one."""
  url = file_url(spec, urls)
  if spec.container == "zip":
    return f"{url} (zip member {spec.member or spec.name})"
  if spec.container == "bz2":
    return f"{url} (bz2-compressed)"
  return url


def fetch(specs, dest_root=None, urls=None):
  """Downloads ``specs`` into ``dest_root/<subdir>/<name>`` (uncompressed); returns their paths.

  Specs sharing one container URL (both Dota2 files in one zip) are fetched with one download.

  Args:
    specs: sequence of ``files.FileSpec``.
    dest_root: destination root, default the user cache.
    urls: optional {source: base URL} overrides.

  Returns:
    {spec: pathlib.Path} of the verified files.

  Raises:
    OSError (requests' ConnectionError / HTTPError, DownloadError): the download failed or the
      container is truncated.
    files.ChecksumError: the downloaded content does not match the published sha256.
  """
  dest_root = pathlib.Path(dest_root) if dest_root is not None else files.user_cache_dir()
  dest_root.mkdir(parents=True, exist_ok=True)
  by_url = {}
  for spec in specs:
    by_url.setdefault(file_url(spec, urls), []).append(spec)
  paths = {}
  for url, group in by_url.items():
    with tempfile.TemporaryDirectory(dir=dest_root, prefix=".download.") as scratch:
      with _quiet(pooch.get_logger()):   # pooch logs every download at INFO
        archive = pooch.retrieve(url, known_hash=None, fname="download", path=scratch,
                                 downloader=pooch.HTTPDownloader(timeout=_TIMEOUT_S))
      for spec in group:
        with _open_member(archive, spec, url) as stream:
          paths[spec] = _install(stream, spec, dest_root, url)
  return paths


@contextlib.contextmanager
def _quiet(logger):
  level = logger.level
  logger.setLevel(logging.WARNING)
  try:
    yield
  finally:
    logger.setLevel(level)


@contextlib.contextmanager
def _open_member(archive, spec, url):
  """Binary stream of ``spec``'s uncompressed bytes inside the downloaded ``archive``."""
  if spec.container is None:
    with open(archive, "rb") as stream:
      yield stream
    return
  if spec.container == "bz2":
    with bz2.open(archive, "rb") as stream:
      yield stream
    return
  try:
    archive_file = zipfile.ZipFile(archive)
  except zipfile.BadZipFile as e:
    raise DownloadError(f"the download from {url} is not a valid zip archive ({e}); nothing "
                        "was installed. Try again later or fetch the file by hand.") from e
  with archive_file, archive_file.open(_find_member(archive_file, spec.member or spec.name,
                                                    url)) as stream:
    yield stream


def _find_member(archive_file, wanted, url):
  names = archive_file.namelist()
  if wanted in names:
    return wanted
  matches = [n for n in names if n.rsplit("/", 1)[-1] == wanted.rsplit("/", 1)[-1]]
  if len(matches) == 1:
    return matches[0]
  raise DownloadError(f"the zip archive from {url} has no member {wanted!r}; its members are "
                      f"{names[:20]}. The source may have changed: fetch the file by hand.")


def _install(stream, spec, dest_root, url):
  """Copies ``stream`` to ``dest_root/subdir/name`` via a temp file; checks sha256 before rename."""
  folder = dest_root / spec.subdir
  folder.mkdir(parents=True, exist_ok=True)
  target = folder / spec.name
  fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{spec.name}.", suffix=".part")
  digest = hashlib.sha256()
  try:
    with os.fdopen(fd, "wb") as out:
      try:
        while True:
          chunk = stream.read(_CHUNK)
          if not chunk:
            break
          digest.update(chunk)
          out.write(chunk)
      except _CONTAINER_ERRORS as e:
        raise DownloadError(f"the download of {spec.name} from {url} failed or is truncated "
                            f"({type(e).__name__}: {e}); nothing was installed.") from e
    actual = digest.hexdigest()
    if spec.sha256 is not None and actual != spec.sha256:
      raise files.ChecksumError(
          f"the download of {spec.name} from {url} has sha256 {actual}, expected {spec.sha256}; "
          f"it was rejected and nothing was written to {target}. The transfer was corrupted or "
          "the source now serves another version: try again, or fetch the file by hand and "
          "check it against ../shared/data/MANIFEST.md.")
    os.replace(tmp, target)
  except BaseException:
    files.remove_quietly(tmp)
    raise
  if spec.sha256 is not None:
    files.record_verified(target, actual)
  else:
    files.logger.warning("%s was downloaded from %s without a published sha256 to check it "
                         "against; it is used unverified.", spec.name, url)
  return target
