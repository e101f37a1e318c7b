"""Ctrl-C at any moment of a command: exit status 130 and one line, never death by SIGINT.

The command line runs in a child as the ``cwkit`` script does; the test waits until its
interpreter is up (the moment ``cwkit`` starts being imported: the interpreter's own
start-up is Python's), then sends SIGINT after a random delay spread over the import,
the work and the exit.  Before Ctrl-C was held during the import, about one try in four
was killed by SIGINT with a traceback.
"""
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import cwkit
from cwkit import _interrupt

pytestmark = pytest.mark.skipif(os.name != "posix", reason="sends SIGINT to a child")

CHILD = """
import os, sys
os.write(1, b"up\\n")                   # the interpreter has started
sys.argv = ["cwkit", *sys.argv[1:]]     # as the cwkit script is run
from cwkit.cli import main
sys.exit(main())
"""


def _start(*argv):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *map(str, argv)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"up\n"
    return proc


@pytest.mark.slow   # about 8 s: 13 processes, each signalled at a random moment
def test_ctrl_c_during_start_work_or_exit_exits_130(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(3000, 5)), rng.choice([-1, 1], 3000)
    data = tmp_path / "d.svm"
    cwkit.dump_svmlight(X, y, data)
    model = tmp_path / "m.cwk"
    cwkit.save(cwkit.make("arow").fit(X, y), model)
    argv = ("predict", model, data, "-o", tmp_path / "out.txt")
    began = time.perf_counter()
    proc = _start(*argv)
    assert proc.wait(120) == 0
    whole = time.perf_counter() - began
    random.seed(1)
    codes = []
    for _ in range(12):
        proc = _start(*argv)
        time.sleep(random.uniform(0, whole))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        codes.append(proc.returncode)
        assert proc.returncode in (0, 130), (proc.returncode, err.decode()[-2000:])
        if proc.returncode == 130:
            assert err.decode().startswith("cwkit: interrupted") and len(err.splitlines()) == 1
    assert 130 in codes, codes


@pytest.mark.parametrize(("orig_argv", "argv0", "cli"), [
    (["python", "-m", "cwkit", "eval"], "-m", True),
    (["python", "-X", "dev", "-W", "error", "-m", "cwkit"], "-m", True),
    (["python", "-mcwkit"], "-m", True),
    (["/venv/bin/python", "/venv/bin/cwkit", "eval"], "/venv/bin/cwkit", True),
    (["python", "-m", "cwkitx"], "-m", False),
    (["python", "script.py", "-m", "cwkit"], "script.py", False),
    (["python", "-c", "import cwkit", "-m", "cwkit"], "-c", False),
    (["python"], "", False),
])
def test_only_the_command_line_holds_ctrl_c(monkeypatch, orig_argv, argv0, cli):
    monkeypatch.setattr(sys, "orig_argv", orig_argv, raising=False)
    monkeypatch.setattr(sys, "argv", [argv0])
    assert _interrupt.launched_as_cli() is cli


def test_ctrl_c_while_parsing_arguments_waits_for_the_parse(monkeypatch, tmp_path, capsys):
    """argparse's intermixed parse, interrupted half-way, fails in its own clean-up with an
    AttributeError (exit status 1): Ctrl-C stays held until the parse is over."""
    import argparse

    from cwkit import cli
    parsed = []
    get_values = argparse.ArgumentParser._get_values

    def interrupted(self, action, strings):
        if not parsed:
            os.kill(os.getpid(), signal.SIGINT)
            parsed.append("after the signal")   # reached only if it is held
        return get_values(self, action, strings)

    monkeypatch.setattr(argparse.ArgumentParser, "_get_values", interrupted)
    monkeypatch.setattr(_interrupt, "launched_as_cli", lambda: True)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupt.hold()
        status = cli.main(["predict", str(tmp_path / "m.cwk"), str(tmp_path / "d.svm")])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert parsed == ["after the signal"]
    assert status == 130 and capsys.readouterr().err == "cwkit: interrupted\n"
