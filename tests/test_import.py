"""Packaging details a user meets first."""
import os
import shutil
import signal
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

import cwkit
from cwkit.base import _distinct


def _python(code, quiet=False, **kwargs):
    """The words a fresh interpreter running ``code`` prints (it must succeed; with
    ``quiet``, without a word on stderr)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          **kwargs)
    assert proc.returncode == 0 and not (quiet and proc.stderr), proc.stderr
    return proc.stdout.split()


def test_unbuilt_source_tree_says_how_to_build(tmp_path):
    """A copy of the package without its compiled extension fails with instructions."""
    pkg = Path(cwkit.__file__).parent
    dest = tmp_path / "cwkit"
    shutil.copytree(pkg, dest, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    # -S: no site-packages, so neither an installed copy nor an editable install's finder
    # can stand in for the unbuilt copy (the error comes before numpy is imported)
    proc = subprocess.run([sys.executable, "-S", "-c", "import cwkit"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr
    assert "cwkit._core is not built in" in proc.stderr and str(dest) in proc.stderr
    assert "`pip install -e .`" in proc.stderr


@pytest.mark.parametrize("command", [[sys.executable, "-m", "cwkit"],
                                     [str(Path(sys.executable).with_name("cwkit"))]],
                         ids=["python-m", "console-script"])
def test_version(command):
    proc = subprocess.run([*command, "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"cwkit {cwkit.__version__}"


def test_every_subpackage_is_packaged():
    """A regular install (a wheel, ``pip install .``) holds the packages pyproject.toml
    names, and only those: every folder of cwkit with an ``__init__.py`` must be named
    (``cwkit.models`` was not, and only editable installs worked)."""
    try:
        import tomllib
    except ModuleNotFoundError:     # Python 3.10: pytest's own dependency
        import tomli as tomllib
    root = Path(__file__).resolve().parents[1]
    listed = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {".".join(p.parent.relative_to(root).parts)
             for p in (root / "cwkit").rglob("__init__.py")}
    assert found <= set(listed["packages"])


def test_version_is_the_package_metadata():
    assert metadata.version("cwkit") == cwkit.__version__


def test_version_and_public_names():
    assert cwkit.__version__
    for name in cwkit.__all__:
        assert hasattr(cwkit, name), name


def test_readme_command_from_the_project_root():
    """`python -m cwkit eval --algos pa,cw,arow` as the README types it, from the root."""
    root = Path(__file__).resolve().parents[1]
    if Path(cwkit.__file__).resolve().parent != root / "cwkit":
        pytest.skip("cwkit under test is installed elsewhere (tox), not built in this tree")
    proc = subprocess.run([sys.executable, "-m", "cwkit", "eval", "--algos", "pa,cw,arow"],
                          cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "breast-cancer_scale.svm (shipped)" in proc.stdout
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("algo "))
    assert [line.split()[0] for line in lines[header + 1:header + 4]] == ["pa", "cw", "arow"]


def test_import_leaves_scipy_sparse_and_special_for_later(tmp_path):
    """scipy.sparse and scipy.special take longer to import than numpy: ``import cwkit``
    and ``import cwkit.cli`` need neither, nor does ``cwkit eval`` of a file, whose
    learners take the parser's arrays (nor numpy.ma, which np.unique imports, nor
    numpy.random); fitting CSR data brings in scipy.sparse, and CW
    scipy.special only for an eta other than its defaults (``cwkit.linear._phi``)."""
    path = tmp_path / "f.svm"
    path.write_bytes(b"1 1:0.5 3:1\n-1 2:2\n1 3:1\n" * 5)
    code = ("import sys, cwkit, cwkit.cli; before = sorted(m for m in ('scipy.sparse', "
            "'scipy.special') if m in sys.modules); "
            f"cwkit.cli.main(['eval', '--algos', 'pa,cw,arow', '--quiet', {str(path)!r}]); "
            "after = [m for m in ('scipy.sparse', 'numpy.ma', 'numpy.random') "
            "if m in sys.modules]; "
            "import numpy as np, scipy.sparse as sp; X = sp.csr_matrix(np.eye(2)); "
            "cwkit.make('cw').fit(X, [0, 1]); cwkit.make('cw-stdev').fit(X, [0, 1]); "
            "default = 'scipy.special' in sys.modules; "
            "cwkit.make('cw', eta=0.8).fit(X, [0, 1]); "
            "print(before, after, default, 'scipy.special' in sys.modules)")
    assert _python(code)[-4:] == ["[]", "[]", "False", "True"]


@pytest.mark.parametrize("values", [[0.0, -0.0], [-0.0, 0.0], [1.0, np.nan, np.nan, -1.0],
                                    [2, 1, 2], ["b", "a", "b"], [True, False]])
def test_distinct_labels_are_np_unique(values):
    """The labels of a first ``partial_fit`` (``cwkit.base._distinct``, which spares the
    numpy.ma import) are np.unique's, the sign of a zero label included."""
    values = np.array(values)
    got, want = _distinct(values), np.unique(values)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="threads have no "
                    "signal mask here (Windows)")
def test_preload_imports_on_a_helper_thread_that_leaves_signals_alone(tmp_path):
    """``LazyModule.preload`` runs the module's code on a thread of its own, SIGINT and
    SIGTERM blocked there (they stay the main thread's); the first attribute read waits
    for it. A file's chunks as scipy matrices (``SvmlightSource.chunks``) start
    scipy.sparse's import so, to overlap it with the parse of the first ones."""
    (tmp_path / "spied.py").write_text(
        "import signal, threading, time\n"
        "time.sleep(0.2)\n"
        "where = (threading.current_thread().name,\n"
        "         signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))\n")
    path = tmp_path / "f.svm"
    path.write_bytes(b"1 1:0.5 3:1\n-1 2:2\n")
    code = (
        "import sys, threading, cwkit.sources, cwkit._lazy as lazy\n"
        "started = []; start = threading.Thread.start\n"
        "threading.Thread.start = lambda self: (started.append(self.name), start(self))\n"
        "m = lazy.LazyModule('spied'); m.preload()\n"
        "print(*m.where, 'spied' in sys.modules)\n"
        f"src = cwkit.sources.SvmlightSource({str(path)!r}).scan()\n"
        "X, y, index = next(src.chunks())\n"
        "print(started[:2], X.format, X.shape)\n")
    assert _python(code, env={**os.environ, "PYTHONPATH": str(tmp_path)}) == [
        "cwkit-import-spied", "True", "True",
        "['cwkit-import-spied',", "'cwkit-import-scipy.sparse']", "csr", "(2,", "3)"]


_SLOW_SPARSE = """
import importlib.util, sys, time
class Slow:     # scipy.sparse's code starts 0.3 s after the module is in sys.modules
    def find_spec(self, name, path, target=None):
        if name != "scipy.sparse":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        real = spec.loader.exec_module
        spec.loader.exec_module = lambda module: (time.sleep(0.3), real(module))
        return spec
sys.meta_path.insert(0, Slow())
"""
# Until the preload thread has put scipy.sparse in sys.modules (its 0.3 s inside begins
# then): polled, not a fixed sleep, which a loaded machine can outlast before the thread runs.
_WAIT_IN_SYS_MODULES = (
    "deadline = time.monotonic() + 60\n"
    "while 'scipy.sparse' not in sys.modules and time.monotonic() < deadline:\n"
    "    time.sleep(0.001)\n"
    "assert 'scipy.sparse' in sys.modules\n")


def test_an_import_under_way_is_waited_for_not_read_half_done():
    """While the preload thread imports scipy.sparse, the module is in ``sys.modules``
    without its functions: ``issparse`` and the one-row check wait for the import rather
    than read it (AttributeError before)."""
    code = _SLOW_SPARSE + (
        "import time, numpy as np, cwkit._lazy as lazy, cwkit._rowdata as rd\n"
        "lazy.sparse.preload()\n" + _WAIT_IN_SYS_MODULES +
        "print(lazy.issparse(np.zeros(2)), rd.one_csr_row(np.zeros((1, 2)), 2, None))\n")
    assert _python(code) == ["False", "None"]


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="needs os.fork (POSIX)")
def test_a_fork_waits_for_the_import_under_way():
    """A child forked while the preload thread imports would inherit the module's import
    lock, held by a thread it does not have, and hang on its first use: the fork waits."""
    code = _SLOW_SPARSE + (
        "import os, signal, time, warnings, cwkit._lazy as lazy\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "lazy.sparse.preload()\n" + _WAIT_IN_SYS_MODULES +
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    signal.alarm(10)\n"
        "    lazy.sparse.csr_matrix((1, 2))\n"
        "    os._exit(0)\n"
        "print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n")
    assert _python(code, timeout=60) == ["0"]


def test_preload_leaves_the_import_error_to_the_first_use():
    """A module that cannot be imported: the helper thread says nothing, the first attribute
    read raises the ImportError; a module already imported starts no thread."""
    code = ("import threading, cwkit._lazy as lazy\n"
            "m = lazy.LazyModule('cwkit_no_such_module'); m.preload()\n"
            "try:\n    m.anything\nexcept ImportError as exc:\n    print(type(exc).__name__)\n"
            "started = []; start = threading.Thread.start\n"
            "threading.Thread.start = lambda self: (started.append(self.name), start(self))\n"
            "lazy.LazyModule('sys').preload(); print(len(started))")
    assert _python(code, quiet=True) == ["ModuleNotFoundError", "0"]


@pytest.mark.parametrize("eta", [0.9, 0.7, 0.8])
def test_phi_is_scipy_ndtri_bit_for_bit(eta):
    """The default etas' phi, written out to spare the scipy.special import, are the
    doubles scipy.special.ndtri gives (and any other eta is computed by it)."""
    from scipy.special import ndtri

    from cwkit.linear import ConfidenceWeighted, _phi

    assert set(ConfidenceWeighted._default_eta.values()) == {0.9, 0.7}
    assert _phi(eta).hex() == float(ndtri(eta)).hex()



def test_submodules_are_reachable_after_import_cwkit():
    """``import cwkit`` alone reaches ``cwkit.datasets`` and the other public modules (the
    documents use them so), imported at their first use; other names stay errors."""
    code = ("import sys, cwkit\n"
            "print('cwkit.datasets' in sys.modules,\n"
            "      cwkit.datasets.load_breast_cancer()[0].shape[0])\n"
            "print(all(hasattr(cwkit, m) for m in ('evaluate', 'kernel_approx', 'kernels', "
            "'report', 'sources')))\n"
            "try:\n    cwkit.no_such_module\nexcept AttributeError as exc:\n    print(exc)")
    assert _python(code, quiet=True) == ["False", "683", "True", "module", "'cwkit'", "has",
                                         "no", "attribute", "'no_such_module'"]


def test_a_rules_kernel_approx_form_is_found_by_name_in_a_fresh_process():
    """``import cwkit`` imports its modules on first use; a rule's form on approximate
    kernel features (made by the registry) is still found by its module and qualified
    name, as pickle's loader finds a class, in a process that has not imported the
    registry (as a Dask worker's), without loading any pickle here."""
    cls = type(cwkit.make("arow", kernel_approx="rff", gamma=0.5, n_components=8))
    code = ("import functools, importlib, sys; "
            f"c = functools.reduce(getattr, {cls.__qualname__!r}.split('.'), "
            f"importlib.import_module({cls.__module__!r})); "
            "print(c.__name__, 'cwkit.registry' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert proc.stdout.split() == [b"AROWApprox", b"False"], proc.stderr


def test_the_command_line_starts_with_the_collector_paused(monkeypatch):
    """Launched as the command line, the package's import pauses the cyclic collector;
    the command line resumes it with what was made frozen. Imported otherwise, nothing."""
    import gc

    from cwkit import _collector

    _collector.pause()                  # (pytest is not the command line)
    assert gc.isenabled() and not _collector._paused
    monkeypatch.setattr(_collector, "launched_as_cli", lambda: True)
    frozen = gc.get_freeze_count()
    try:
        _collector.pause()
        assert not gc.isenabled()
        cwkit.cli.main(["--version"])
        assert gc.isenabled() and gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
        gc.enable()
