"""The installed version of qsg_jax (``qsg_jax.__version__``), recorded in every model file."""

import importlib.metadata

try:
  __version__ = importlib.metadata.version("qsg_jax")
except importlib.metadata.PackageNotFoundError:   # a source tree that was never installed
  __version__ = "0+unknown"
