"""Every exception qsg_jax raises on purpose, in one place.

Each subclasses the built-in exception a caller would already catch (``FloatingPointError``,
``MemoryError``, ``FileNotFoundError``, ``ValueError``, ``OSError``), so ``except ValueError``
keeps working; catch these classes to handle a qsg_jax failure specifically. Bad arguments
raise plain ``ValueError`` / ``TypeError`` with a message that says what was received, what
was expected and how to fix it.
"""


class DivergenceError(FloatingPointError):
  """Training produced non-finite or exploding scores; the message says when and what to change."""


class InsufficientMemoryError(MemoryError):
  """Raised before an allocation that would not fit in the available memory."""


class DataNotFoundError(FileNotFoundError):
  """A data file is neither on disk nor downloadable; the message lists where it looked."""


class ChecksumError(ValueError):
  """A data file's content differs from its published sha256 (corrupt, truncated or another)."""


class DownloadError(OSError):
  """A download failed, was truncated or is not what was expected; nothing was installed."""


class UnscaledFeaturesWarning(UserWarning):
  """Features lie far outside the min-max range [0, 1] the kernel and its defaults assume."""


class ApproximationWarning(UserWarning):
  """The kernel model approximates the objective poorly for this data: a Nystrom map that leaves
  much of the kernel unexplained, or a kernel too flat or too narrow for the data (either
  solver); the message says which and what to change."""


class SlowConfigWarning(UserWarning):
  """A configuration that trains correctly but much slower (e.g. a prime num_steps)."""
