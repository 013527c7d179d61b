"""Shared test configuration: strict rank promotion, a PRNG key fixture, data locations."""

import atexit
import os
import pathlib
import shutil
import tempfile

# The suite runs in two worker processes on two cores (pyproject's -n 2): each worker computes on
# one thread, so that XLA's and BLAS's thread pools do not spin against the other worker's.
# Before jax is imported; a user's own XLA_FLAGS are kept.
if os.environ.get("PYTEST_XDIST_WORKER") and "XLA_FLAGS" not in os.environ:
  os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

import jax  # pylint: disable=g-import-not-at-top,wrong-import-position
import pytest  # pylint: disable=g-import-not-at-top,wrong-import-position
import threadpoolctl  # pylint: disable=g-import-not-at-top,wrong-import-position

jax.config.update("jax_numpy_rank_promotion", "raise")
if os.environ.get("PYTEST_XDIST_WORKER"):
  threadpoolctl.threadpool_limits(limits=1)


def _scratch_directory(variable: str, prefix: str) -> None:
  """Points ``variable`` at a new temporary directory, removed when this process exits, unless
  it is set (pytest-xdist's workers inherit the controller's)."""
  if variable not in os.environ:
    os.environ[variable] = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, os.environ[variable], ignore_errors=True)


# Tests never touch the internet, and keep parsed-data caches out of the user's home.
os.environ.setdefault("QSG_JAX_DOWNLOAD", "0")
_scratch_directory("QSG_JAX_CACHE", "qsg_jax_test_cache_")
# hypothesis keeps example / constant caches in ./.hypothesis unless told otherwise; the
# properties are derandomized, so nothing there is worth keeping in the checkout.
_scratch_directory("HYPOTHESIS_STORAGE_DIRECTORY", "qsg_jax_test_hypothesis_")

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture
def key():
  return jax.random.key(0)


@pytest.fixture
def shared_data_dir():
  """The bundled real datasets (../shared/data), or skip when this checkout has none."""
  path = pathlib.Path(os.environ.get("QSG_JAX_DATA", SHARED_DATA))
  if not path.is_dir():
    pytest.skip(f"real datasets not found at {path}; set QSG_JAX_DATA")
  return path


MAX_MESSAGE = 300   # characters: an error message is a sentence or two, never a whole array


def raises_short(error, pattern, fn, *args, **kwargs):
  """``fn(*args, **kwargs)`` raises ``error`` matching ``pattern`` in under MAX_MESSAGE chars."""
  with pytest.raises(error, match=pattern) as info:
    fn(*args, **kwargs)
  assert len(str(info.value)) < MAX_MESSAGE, str(info.value)
  return str(info.value)
