"""Ctrl-C while the command line starts and ends.

Python turns SIGINT into KeyboardInterrupt.  One raised while ``cwkit`` is imported (numpy,
scipy and the compiled core take most of a second, several on a busy machine), before the
command line's handler runs, or after the command's exit status is decided, escapes that
handler: the interpreter then ends itself by SIGINT, with a traceback, instead of exiting
with status 130 and one line.  When the package is imported to run the command line
(``cwkit ...`` or ``python -m cwkit ...``), a Ctrl-C is therefore held from the package's
first line (this module's import) until the command's arguments are parsed (argparse
cannot clean up after an interrupt half-way through) and the command starts
(:func:`release` raises it there), and ignored once the command is over
(:func:`finish`).  Imported any other way,
nothing changes.
"""
import os
import signal
import sys
import threading

_held = None    # the signals received while holding (a list), None when not holding


def launched_as_cli():
    """Whether this interpreter runs the command line: the ``cwkit`` script, or
    ``python [options] -m cwkit``."""
    script = os.path.splitext(os.path.basename(sys.argv[0] if sys.argv else ""))[0]
    if script == "cwkit":
        return True
    argv = getattr(sys, "orig_argv", None) or []
    k = 1
    while k < len(argv) and argv[k].startswith("-") and argv[k] != "-":
        if argv[k].startswith("-m"):    # (the interpreter's options end there)
            return (argv[k][2:] or "".join(argv[k + 1:k + 2])) == "cwkit"
        if argv[k].startswith("-c"):
            return False
        k += 2 if argv[k] in ("-X", "-W") else 1
    return False


def _hold_one(signum, frame):
    _held.append(signum)


def hold():
    """Hold Ctrl-C if the command line is being started from the main thread with
    Python's own SIGINT handler (a program's handler is left alone)."""
    global _held
    if (_held is None and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
            and launched_as_cli()):
        _held = []
        signal.signal(signal.SIGINT, _hold_one)


def release():
    """Python's handler back; KeyboardInterrupt if Ctrl-C was pressed meanwhile."""
    global _held
    if _held is None:
        return
    held, _held = _held, None
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if held:
        raise KeyboardInterrupt


def finish(started):
    """Ignore Ctrl-C from now on if ``started`` (the command line held it at start):
    its exit status is decided."""
    if started:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def holding():
    """Whether Ctrl-C is held (the command line is starting)."""
    return _held is not None


hold()      # on import, which the package does first
