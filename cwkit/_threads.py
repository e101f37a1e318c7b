"""Helper threads that leave signals to the main thread.

A process-directed signal such as SIGINT (Ctrl-C) is delivered by the operating system to
any thread that does not block it. When a helper thread receives it while the main thread
is blocked waiting for that helper's result, Python records the signal but the waiting main
thread is not woken; on CPython 3.11 a helper thread that then runs Python code can even
clear the interpreter's "signal pending" flag, so the main thread never raises
KeyboardInterrupt and the run goes on. Every thread cwkit starts therefore blocks the
signals Python handles, so that they always reach the main thread: from its first
instruction, as it is started with them blocked (:func:`start`), since a thread that
blocked them itself could still take one before it did (an eval starts a reader thread
every pass).
"""
import contextlib
import os
import signal

_SIGNALS = {s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None))
            if s is not None}


def usable_cores():
    """The cores this process may run on (its CPU affinity where the platform tells it)."""
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return len(cores) if cores else os.cpu_count() or 1


@contextlib.contextmanager
def signals_blocked():
    """SIGINT and SIGTERM blocked in the calling thread for the block, then its mask as
    it was (a no-op where threads have no signal mask: Windows). A thread started inside
    inherits the mask, so it blocks them from its first instruction; a signal that
    arrives meanwhile waits, and reaches the main thread when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def start(thread):
    """``thread.start()``, the thread blocking SIGINT and SIGTERM from its start."""
    with signals_blocked():
        thread.start()


def try_start(thread):
    """:func:`start`, or False where no thread can be started (RuntimeError: the
    process's limit, interpreter shutdown), for a helper whose work the caller can do."""
    try:
        start(thread)
    except RuntimeError:
        return False
    return True
