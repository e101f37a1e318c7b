"""The package's imports form layers: no import cycle, at top level or inside functions."""
import ast
import pathlib

import cwkit

ROOT = pathlib.Path(cwkit.__file__).parent


def module_name(path):
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules():
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports(name, path, known):
    """The cwkit modules that `name` imports anywhere in its source (functions included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = ".".join(base[:len(base) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module
            # `from . import x` names a module x; `from .x import y` imports x
            targets = [f"{base}.{alias.name}" for alias in node.names
                       if f"{base}.{alias.name}" in known] or [base]
        else:
            continue
        found.update(t for t in targets if t == "cwkit" or t.startswith("cwkit."))
    return found


def graph():
    known = modules()
    known_names = set(known) | {"cwkit._core"}
    return {name: {t for t in imports(name, path, known_names) if t != name}
            for name, path in known.items()}


#: The layers, lowest first: a module imports only from its own layer (without cycles)
#: or those below.  Every module of the package belongs to one; the package ``cwkit``
#: itself (its ``__init__``) sits above them all and nothing imports it back.
LAYERS = [
    {"cwkit._core", "cwkit._version", "cwkit._atomic", "cwkit._lazy", "cwkit._collector",
     "cwkit._threads", "cwkit._interrupt", "cwkit._blas", "cwkit._malloc",
     "cwkit.references"},   # kernels
    {"cwkit._params", "cwkit._rowdata", "cwkit._weights", "cwkit.qp",
     "cwkit.features", "cwkit.text"},                           # validation
    {"cwkit.models"},                                         # the model factory
    {"cwkit.base", "cwkit.named"},                            # the estimator protocol
    {"cwkit.linear", "cwkit.gaussian", "cwkit.minibatch", "cwkit.l1pa", "cwkit.kernels",
     "cwkit.kernel_approx", "cwkit.regression"},  # estimator families (regression: a task)
    {"cwkit.registry", "cwkit.persist"},                      # names and model files
    {"cwkit.svmlight", "cwkit.vw", "cwkit.datasets", "cwkit.sources"},   # I/O, data sets
    {"cwkit.evaluate"},                                       # the evaluation protocol
    {"cwkit.distributed"},                                    # training over partitions
    {"cwkit.report", "cwkit._diagnose", "cwkit.cli", "cwkit.__main__"},   # the command line
]


def layer(name):
    for i, members in enumerate(LAYERS):
        if name in members or name.rpartition(".")[0] in members:
            return i
    return None


def test_every_module_has_a_layer():
    assert sorted(name for name in graph() if name != "cwkit" and layer(name) is None) == []


def test_imports_only_downwards():
    wrong = sorted(f"{name} -> {target}" for name, targets in graph().items()
                   if name != "cwkit" for target in targets
                   if target == "cwkit" or layer(target) > layer(name))
    assert wrong == []


def test_import_graph_is_acyclic():
    """Including the package itself: nothing it imports may import it back."""
    edges = graph()
    state = {}

    def visit(name, path):
        state[name] = "open"
        for target in sorted(edges.get(name, ())):
            if state.get(target) == "open":
                cycle = path[path.index(target):] + [target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, path + [target])
        state[name] = "done"

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
