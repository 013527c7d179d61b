"""The shape of the library, checked: a small top level, layers without circles, public imports
only outside the library, a recorded version, and one DSG step.

The import graph is read statically (``ast``) from every ``qsg_jax/**/*.py``: imports at module
level and inside functions alike (an import inside a function hides a circle from Python, not
from this test). Each failure prints the offending file, line and edge.
"""

import ast
import importlib
import importlib.metadata
import pathlib
import re

import pytest

import qsg_jax

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "qsg_jax"

# Layers, lowest first, as the code is today: a module may import its own layer or lower ones.
# The metrics, thresholds, folds and the configuration's constants are pure tools every method
# uses (the engine's grouped CV scores with metrics.split_aucs; the baselines, the ROC-SVM and
# the direct solver draw their folds from folds), so they sit below the engine. Methods may
# share building blocks within their layer (the direct solver's k-means landmarks come from
# roc_svm.clustering); the circle test keeps those imports one-way.
LAYERS = (
    ("foundations", ("qsg_jax.errors", "qsg_jax.numerics", "qsg_jax._version")),
    ("checks", ("qsg_jax._validation", "qsg_jax.memory")),
    ("shared tools", ("qsg_jax.config", "qsg_jax.metrics", "qsg_jax.thresholds", "qsg_jax.folds")),
    ("engine", ("qsg_jax.engine",)),
    ("methods and data", ("qsg_jax.data", "qsg_jax.distributed", "qsg_jax.baselines",
                          "qsg_jax.roc_svm", "qsg_jax.online_pairwise", "qsg_jax.direct")),
    ("entry point", ("qsg_jax._fit",)),
    ("selection and model files", ("qsg_jax.model_selection", "qsg_jax.io")),
    ("estimators", ("qsg_jax.estimators",)),
    ("top level", ("qsg_jax",)),
)

# Upward imports whose fix belongs to a helper still at work: the layer test reports them as an
# expected failure naming the edge, fails on any other upward import, and fails once an entry
# is fixed (remove it then). Keep it empty.
PENDING_UPWARD = {}

# Private modules that a test may import, each with its reason. Keep it short.
PRIVATE_IMPORT_EXCEPTIONS = {
    ("tests/test_properties.py", "qsg_jax._validation"):
        "the property test of check_labels, the one label checker of every entry point, tested "
        "directly: through fit, each of its valid examples would train",
}

# The DSG update (Eqs. 13-14) and the one function allowed to apply it.
DSG_PIECES = ("functional_gradient", "dsg_update")
DSG_STEP = "qsg_jax.engine.step.dsg_step"


def _module_name(path):
  parts = list(path.relative_to(ROOT).with_suffix("").parts)
  if parts[-1] == "__init__":
    parts.pop()
  return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(path, modules=MODULES):
  """Yields (imported module, line, inside a function) for each qsg_jax import of ``path``."""
  tree = ast.parse(path.read_text(), filename=str(path))
  name = _module_name(path) if path.is_relative_to(PACKAGE) else ""
  package = name if path.name == "__init__.py" else name.rpartition(".")[0]

  def visit(node, in_function):
    for child in ast.iter_child_nodes(node):
      nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                 ast.Lambda))
      if isinstance(child, ast.Import):
        for alias in child.names:
          if alias.name.split(".")[0] == "qsg_jax":
            yield alias.name, child.lineno, in_function
      elif isinstance(child, ast.ImportFrom):
        base = child.module or ""
        if child.level:
          parent = package.split(".")[:len(package.split(".")) - child.level + 1]
          base = ".".join(parent + ([child.module] if child.module else []))
        if base.split(".")[0] == "qsg_jax":
          for alias in child.names:
            submodule = f"{base}.{alias.name}"
            yield (submodule if submodule in modules else base), child.lineno, in_function
            if submodule not in modules and alias.name.startswith("_") and not (
                alias.name.startswith("__")):
              yield f"{base}.{alias.name}", child.lineno, in_function   # a private name
      yield from visit(child, nested)

  yield from visit(tree, False)


def _edges():
  """[(module, imported module, 'file:line', inside a function)] among qsg_jax modules."""
  edges = []
  for module, path in MODULES.items():
    for target, line, in_function in _imports(path):
      if target in MODULES and target != module:
        edges.append((module, target, f"{path.relative_to(ROOT)}:{line}", in_function))
  return edges


def _describe(edge):
  module, target, where, in_function = edge
  return f"{where}: {module} imports {target}" + (" (inside a function)" if in_function else "")


def _layer(module):
  for index, (name, prefixes) in enumerate(LAYERS):
    for prefix in prefixes:
      if module == prefix or (prefix != "qsg_jax" and module.startswith(prefix + ".")):
        return index, name
  return None


# ---- the top level -----------------------------------------------------------------------------

def test_top_level_exports_at_most_40_names_and_each_exists():
  names = qsg_jax.__all__
  assert len(names) <= 40, f"qsg_jax.__all__ has {len(names)} names (at most 40): {names}"
  assert len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)
  missing = [n for n in names if not hasattr(qsg_jax, n)]
  assert not missing, f"qsg_jax.__all__ names what qsg_jax does not define: {missing}"


def test_every_public_all_names_what_its_module_defines():
  missing = []
  for module in sorted(m for m in MODULES if not _private(m) and m != "qsg_jax"):
    mod = importlib.import_module(module)
    missing += [f"{module}.{n}" for n in getattr(mod, "__all__", ()) if not hasattr(mod, n)]
  assert not missing, f"__all__ names what its module does not define: {missing}"


def test_version_exists_and_is_the_projects():
  pyproject = re.search(r'(?ms)^\[project\].*?^version\s*=\s*"([^"]+)"',
                        (ROOT / "pyproject.toml").read_text()).group(1)   # no tomllib on 3.10
  version = qsg_jax.__version__
  assert isinstance(version, str) and re.fullmatch(r"\d+(\.\d+)*\S*", version), version
  try:
    installed = importlib.metadata.version("qsg_jax")
  except importlib.metadata.PackageNotFoundError:   # a source tree that was never installed
    assert version == "0+unknown", version
  else:
    assert version == installed == pyproject, (
        f"qsg_jax.__version__ {version!r}, installed {installed!r}, pyproject.toml "
        f"{pyproject!r}: reinstall with pip install -e .")
  # That a saved model records it: tests/test_io.py::
  # test_model_files_record_the_version_and_refuse_edited_metadata.


# ---- the import graph --------------------------------------------------------------------------

def test_the_import_graph_is_read():
  """Guards the other graph tests against an empty or unresolved graph."""
  edges = {(m, t) for m, t, _, _ in _edges()}
  assert ("qsg_jax.engine.loop", "qsg_jax.engine.step") in edges
  assert ("qsg_jax", "qsg_jax._fit") in edges
  assert len(MODULES) > 50 and len(edges) > 100, (len(MODULES), len(edges))


def test_every_module_has_a_layer():
  unplaced = [m for m in MODULES if _layer(m) is None]
  assert not unplaced, f"place these modules in LAYERS of {__file__}: {unplaced}"


def test_no_import_from_a_lower_layer_to_a_higher_one():
  upward, pending = [], set()
  for edge in _edges():
    (low, low_name), (high, high_name) = _layer(edge[0]), _layer(edge[1])
    if high > low:
      if edge[:2] in PENDING_UPWARD:
        pending.add(edge[:2])
      else:
        upward.append(f"{_describe(edge)}: layer {low_name!r} below {high_name!r}")
  assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)
  fixed = set(PENDING_UPWARD) - pending
  assert not fixed, f"fixed, remove from PENDING_UPWARD: {sorted(fixed)}"
  if pending:
    pytest.xfail("; ".join(f"{a} imports {b}: {PENDING_UPWARD[a, b]}" for a, b in sorted(pending)))


def _strongly_connected(graph):
  """Tarjan's strongly connected components of {node: set of nodes}."""
  index, low, stack, on_stack, components = {}, {}, [], set(), []

  def connect(node):
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    for nxt in sorted(graph.get(node, ())):
      if nxt not in index:
        connect(nxt)
        low[node] = min(low[node], low[nxt])
      elif nxt in on_stack:
        low[node] = min(low[node], index[nxt])
    if low[node] == index[node]:
      component = set()
      while True:
        top = stack.pop()
        on_stack.discard(top)
        component.add(top)
        if top == node:
          break
      components.append(component)

  for node in sorted(graph):
    if node not in index:
      connect(node)
  return components


def test_no_import_circle_among_modules():
  edges = _edges()
  graph = {}
  for module, target, _, _ in edges:
    graph.setdefault(module, set()).add(target)
  circles = [c for c in _strongly_connected(graph) if len(c) > 1]
  report = []
  for circle in circles:
    report.append("circle among " + ", ".join(sorted(circle)) + ":")
    report += ["  " + _describe(e) for e in edges if e[0] in circle and e[1] in circle]
  assert not circles, "import circles:\n" + "\n".join(report)


def test_circle_detection_finds_a_planted_circle():
  graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
  assert [c for c in _strongly_connected(graph) if len(c) > 1] == [{"a", "b", "c"}]


# ---- public imports outside the library --------------------------------------------------------

def _private(module):
  return any(part.startswith("_") and not part.startswith("__") for part in module.split(".")[1:])


def test_experiments_and_tests_import_only_public_modules():
  found, used = [], set()
  for folder in ("experiments", "tests"):
    for path in sorted((ROOT / folder).rglob("*.py")):
      where = str(path.relative_to(ROOT))
      for target, line, _ in _imports(path):
        if not _private(target):
          continue
        if (where, target) in PRIVATE_IMPORT_EXCEPTIONS:
          used.add((where, target))
        else:
          found.append(f"{where}:{line}: imports the private {target}")
  assert not found, ("import public paths (qsg_jax.<name>), or add a justified entry to "
                     "PRIVATE_IMPORT_EXCEPTIONS:\n" + "\n".join(found))
  stale = set(PRIVATE_IMPORT_EXCEPTIONS) - used
  assert not stale, f"exceptions no longer needed, remove them: {sorted(stale)}"


def test_private_import_detection_sees_every_form(tmp_path):
  source = tmp_path / "sample.py"
  source.write_text("import qsg_jax._fit\nfrom qsg_jax import _validation\n"
                    "from qsg_jax.estimators import _ranker\nfrom qsg_jax.metrics import _host\n"
                    "def f():\n  from qsg_jax import metrics\n")
  found = sorted((t, line, f) for t, line, f in _imports(source) if _private(t))
  assert found == [("qsg_jax._fit", 1, False), ("qsg_jax._validation", 2, False),
                   ("qsg_jax.estimators._ranker", 3, False), ("qsg_jax.metrics._host", 4, False)]
  assert ("qsg_jax.metrics", 6, True) in list(_imports(source))


# ---- one DSG step ------------------------------------------------------------------------------

def _functions_using(names):
  """{function qualified name: set of ``names`` it references} over qsg_jax (a call, or passed
  as a value, e.g. to jax.vmap), by the last component of a Name or Attribute."""
  users = {}
  for module, path in MODULES.items():
    tree = ast.parse(path.read_text())

    def visit(node, scope):
      for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
          visit(child, f"{scope}.{child.name}" if scope else f"{module}.{child.name}")
          continue
        used = (child.id if isinstance(child, ast.Name) else
                child.attr if isinstance(child, ast.Attribute) else None)
        if used in names:
          users.setdefault(scope or module, set()).add(used)
        visit(child, scope)

    visit(tree, "")
  return users


def _scan_calls(function):
  """The ``*.scan(...)`` calls inside ``function`` (a qualified name)."""
  module = max((m for m in MODULES if function.startswith(m + ".")), key=len)
  name = function.rpartition(".")[2]
  tree = ast.parse(MODULES[module].read_text())
  node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)
  return [n for n in ast.walk(node) if isinstance(n, ast.Call) and
          isinstance(n.func, ast.Attribute) and n.func.attr == "scan"]


def test_one_function_applies_the_dsg_update_and_one_scan_runs_it():
  users = _functions_using(set(DSG_PIECES))
  assert users == {DSG_STEP: set(DSG_PIECES)}, (
      f"Eqs. 13-14 (update.{' / update.'.join(DSG_PIECES)}) must be applied by {DSG_STEP} alone "
      f"(one DSG step for f and f + g_j; carry the State, add a head); used by: {users}")
  step_name = DSG_STEP.rpartition(".")[2]
  runners = _functions_using({step_name})
  assert len(runners) == 1, f"{step_name} must be the body of one lax.scan; used by {runners}"
  (runner,) = runners
  assert runner.startswith("qsg_jax.engine."), runner
  assert len(_scan_calls(runner)) == 1, f"{runner} should scan {step_name} once"


# ---- RELIABILITY.md, the index of the bad-input tests ------------------------------------------

def test_reliability_index_names_tests_that_exist():
  text = (ROOT / "RELIABILITY.md").read_text()
  cited = re.findall(r"\b(test_\w+\.py)(?:::(test_\w+))?", text)
  assert len(cited) > 50, len(cited)
  missing = []
  for file, function in cited:
    path = ROOT / "tests" / file
    if not path.is_file():
      missing.append(f"tests/{file}")
    elif function and not re.search(rf"^def {function}\(", path.read_text(), re.M):
      missing.append(f"tests/{file}::{function}")
  assert not missing, f"RELIABILITY.md names tests that do not exist: {sorted(set(missing))}"
