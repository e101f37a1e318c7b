# The estimators' lock: a re-entrant lock, as threading.RLock, that compiled code
# takes and releases without a Python call.
#
# Provides: `StateLock` (cwkit.base gives each estimator one, lazily), its C methods
# `enter` and `leave` (the one-row path of named rows, _named.pxi).
# Uses: nothing.

from cpython.pythread cimport (
    PyThread_type_lock, PyThread_allocate_lock, PyThread_free_lock, PyThread_acquire_lock,
    PyThread_release_lock, NOWAIT_LOCK, PyLockStatus, PY_LOCK_ACQUIRED, PY_LOCK_INTR)
from cpython.exc cimport PyErr_CheckSignals
from libc.math cimport isnan

cdef extern from "pythread.h":
    unsigned long cwkit_thread_ident "PyThread_get_thread_ident" () noexcept nogil
    PyLockStatus PyThread_acquire_lock_timed(PyThread_type_lock, long long microseconds,
                                             int intr_flag) nogil

import time as _time


cdef class StateLock:
    """A re-entrant lock (``threading.RLock``'s methods and semantics): the thread
    that holds it may take it again, and releases it as often.

    The owner and depth are read and written only under the GIL; the OS lock under
    them is held while any thread owns it, and a thread that waits for it waits
    without the GIL, interruptible by signals as ``RLock.acquire`` is.  Compiled
    code takes it with `enter` and `leave`, C calls (``RLock.acquire`` parses its
    arguments on every call).
    """
    cdef PyThread_type_lock os_lock
    cdef unsigned long owner
    cdef Py_ssize_t depth

    def __cinit__(self):
        self.os_lock = PyThread_allocate_lock()
        if self.os_lock == NULL:
            raise MemoryError()

    def __dealloc__(self):
        if self.os_lock != NULL:
            PyThread_free_lock(self.os_lock)

    cdef inline bint taken(self) noexcept:
        """Take the lock if this thread holds it or nobody does (True), without
        waiting."""
        cdef unsigned long me = cwkit_thread_ident()
        if self.depth > 0 and self.owner == me:
            self.depth += 1
            return True
        if PyThread_acquire_lock(self.os_lock, NOWAIT_LOCK):
            self.owner = me
            self.depth = 1
            return True
        return False

    cdef bint waited(self, double timeout) except -1:
        """Wait for the lock without the GIL, at most `timeout` seconds (< 0: no
        limit), running signal handlers when a signal interrupts the wait (their
        exception raised); whether it was taken."""
        cdef PyLockStatus r
        cdef long long us
        cdef double deadline = _time.monotonic() + timeout if timeout >= 0 else -1.0
        while True:
            us = -1 if timeout < 0 else <long long>(max(deadline - _time.monotonic(), 0.0)
                                                    * 1e6)
            with nogil:
                r = PyThread_acquire_lock_timed(self.os_lock, us, 1)
            if r != PY_LOCK_INTR:
                break
            PyErr_CheckSignals()    # (a handler's exception propagates)
        if r != PY_LOCK_ACQUIRED:
            return False
        self.owner = cwkit_thread_ident()
        self.depth = 1
        return True

    cdef inline int enter(self) except -1:
        """Take the lock, waiting as long as it takes."""
        if not self.taken():
            self.waited(-1.0)
        return 0

    cdef inline int leave(self) except -1:
        """Release the lock once (its holder only)."""
        if self.depth == 0 or self.owner != cwkit_thread_ident():
            raise RuntimeError("cannot release un-acquired lock")
        self.depth -= 1
        if self.depth == 0:
            self.owner = 0
            PyThread_release_lock(self.os_lock)
        return 0

    def acquire(self, bint blocking=True, double timeout=-1):
        """Take the lock (see ``threading.RLock.acquire``): True, or False where
        not `blocking` or after `timeout` seconds without it."""
        if isnan(timeout) or (timeout < 0 and timeout != -1):
            raise ValueError("timeout value must be a non-negative number")
        if not blocking and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        if self.taken():
            return True
        return blocking and self.waited(timeout)

    def release(self):
        """Release the lock once (see ``threading.RLock.release``)."""
        self.leave()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.leave()
