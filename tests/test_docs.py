"""Every docstring example in the package runs (doctest), and so does every README Python block."""

import doctest
import importlib
import pathlib
import pkgutil
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import qsg_jax
from tests.conftest import REPO_ROOT

_MODULES = sorted(m.name for m in pkgutil.walk_packages(qsg_jax.__path__, "qsg_jax."))


@pytest.mark.parametrize("name", _MODULES)
def test_docstring_examples_run(name):
  module = importlib.import_module(name)
  globs = {"jax": jax, "jnp": jnp, "np": np, "qsg_jax": qsg_jax, **vars(module)}
  result = doctest.testmod(module, globs=globs, optionflags=doctest.NORMALIZE_WHITESPACE,
                           verbose=False, report=True)
  assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (see above)"


def _readme_blocks():
  text = (REPO_ROOT / "README.md").read_text()
  return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_has_python_examples():
  assert len(_readme_blocks()) >= 3


def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch):
  """The blocks run as written, in order, in one namespace (later blocks use earlier ones)."""
  monkeypatch.chdir(tmp_path)
  namespace = {}
  for index, block in enumerate(_readme_blocks()):
    try:
      code = compile(block, f"README.md python block {index}", "exec")
      exec(code, namespace)  # pylint: disable=exec-used
    except Exception as e:  # pylint: disable=broad-except
      raise AssertionError(f"README python block {index} failed: {e!r}\n{block}") from e
