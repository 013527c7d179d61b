"""Every docstring example in the package runs (doctest), and so does every README Python block."""

import doctest
import importlib
import pkgutil
import re
import types

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
  """The blocks run as written, in order, in one namespace (later blocks use earlier ones); the
  composition block's vmap of a jitted whole run gives, trial by trial, the scores of that key's
  run on its own through the un-jitted entry points (init, train, model_scores)."""
  monkeypatch.chdir(tmp_path)
  namespace = {}
  for index, block in enumerate(_readme_blocks()):
    try:
      code = compile(block, f"README.md python block {index}", "exec")
      exec(code, namespace)  # pylint: disable=exec-used
    except Exception as e:  # pylint: disable=broad-except
      raise AssertionError(f"README python block {index} failed: {e!r}\n{block}") from e
  ns = types.SimpleNamespace(**namespace)
  engine = qsg_jax.engine
  key = jax.random.split(jax.random.key(0), 4)[1]                 # the block's second trial
  state = engine.init(key, ns.train_data, ns.config)
  state, _ = engine.train(state, ns.train_data, ns.hyper, ns.config, ns.T)
  alone = engine.model_scores(engine.model_of(state, ns.hyper), jnp.asarray(ns.x_test))
  # float32 rounding differs between the batched (vmap) and the single run, and with the host's
  # instruction set (4.6e-6 on one AMD EPYC): the engine tests' score tolerance. Another trial's
  # scores are 1e-2 or more away, so the tolerance still tells the trials apart.
  np.testing.assert_allclose(ns.trial_scores[1], alone, rtol=1e-4, atol=1e-5)
  assert np.max(np.abs(ns.trial_scores[0] - alone)) > 1e-2
  assert ns.trial_scores.shape == (4, len(ns.x_test))
  assert not np.allclose(ns.trial_scores[0], ns.trial_scores[1])   # different keys, trials


def test_readme_is_a_front_door_whose_numbers_are_the_results_pages():
  """At most 200 lines, the two commands first (install and run, then the tests, which .ci/run
  runs), and every decimal number its prose quotes is in RESULTS.md, the one results page."""
  readme = (REPO_ROOT / "README.md").read_text()
  assert len(readme.splitlines()) <= 200, len(readme.splitlines())
  first = re.search(r"```bash\n(.*?)```", readme, flags=re.S).group(1).splitlines()
  assert first[0].startswith('pip install -e ".[test]" && python -m experiments.run'), first
  test_command = first[1].split("#")[0].strip()
  assert test_command in (REPO_ROOT / ".ci" / "run").read_text(), test_command
  results = (REPO_ROOT / "experiments" / "reproduction" / "RESULTS.md").read_text()
  prose = re.sub(r"```.*?```", "", readme, flags=re.S)
  quoted = set(re.findall(r"(?<![\w.])\d+\.\d+(?!\w|\.\d)", prose))
  assert len(quoted) >= 10, sorted(quoted)
  missing = [n for n in quoted if not re.search(rf"(?<![\d.]){re.escape(n)}(?!\d)", results)]
  assert not missing, f"README numbers absent from RESULTS.md: {sorted(missing)}"
