"""Streaming svmlight / libsvm input and output.

The compiled tokenizer (``cwkit._core._svm_parse``) turns blocks of complete
lines into CSR arrays without the GIL; this module opens files, decompresses,
cuts the stream into blocks at line ends, grows the output arrays, decides
the index base and turns status codes into :class:`SvmlightError`.

Format accepted (one example per line)::

    <label>[,<label>...] [qid:<int>] <index>:<value> <index>:<value> ... [# comment]

Labels and values are decimal numbers (``[+-]?digits[.digits][e[+-]digits]``;
no hex, ``nan`` or ``inf``), indices are non-negative integers below 2**31 in
strictly increasing order; tokens are separated by spaces or tabs, ``#``
starts a comment, blank and comment-only lines are skipped, CRLF line ends
and a last line without newline are accepted.
"""
import bz2
import contextlib
import gzip
import io
import itertools
import lzma
import math
import mmap
import os
import queue
import re
import stat
import sys
import threading
import warnings
import zlib
from collections import namedtuple

import numpy as np

from ._lazy import issparse
from ._lazy import sparse as sp
from . import _core
from ._atomic import atomic_write
from ._rowdata import CSRArrays
from ._threads import start, try_start, usable_cores

__all__ = ["SvmlightError", "SvmlightInfo", "SvmlightWarning", "dump_svmlight",
           "iter_svmlight", "load_svmlight", "scan_svmlight"]

_S = _core.SvmStatus
_INT32_MAX = 2**31 - 1
_CHUNK = 1 << 20            # bytes read per block
_AHEAD = 4                  # batches iter_svmlight parses ahead of its caller
_MAPPED_SLICE = 1 << 24     # bytes of a mapped file scanned per call (Ctrl-C between them)
_SPAN_BLOCKS = 16           # a mapped file is parsed this many chunk_size blocks at a time
_MMAP_MIN = 1 << 24         # output arrays this large (bytes) get their own mapping
_PIECE_MIN = 1 << 16        # blocks are cut into pieces for the threads no smaller than this
_MAX_JOBS = 4               # default threads: the usable cores, at most this many
_MAGIC = ((b"\x1f\x8b", "gz"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"))
_SUFFIX = {".gz": "gz", ".bz2": "bz2", ".xz": "xz"}
_OPENERS = {"gz": gzip.GzipFile, "bz2": bz2.BZ2File, "xz": lzma.LZMAFile}
_TOKEN = re.compile(rb"[^ \t\r\n\x0b\x0c#]*")
_EXPECTED = {
    _S.SVM_BAD_LABEL: "invalid label {tok}: expected a finite decimal number such as 1, -1, "
                      "0 or 2.5 (string labels are not svmlight/libsvm)",
    _S.SVM_BAD_QID: "invalid query id {tok}: expected qid:<integer>",
    _S.SVM_MISSING_COLON: "feature {tok} has no ':': expected <index>:<value>",
    _S.SVM_BAD_INDEX: "feature index in {tok} is not an integer: expected <index>:<value> "
                      "with a non-negative integer index",
    _S.SVM_NEGATIVE_INDEX: "negative feature index in {tok}: indices must be >= 0",
    _S.SVM_INDEX_OVERFLOW: "feature index in {tok} exceeds 2147483647 (int32)",
    _S.SVM_ZERO_INDEX: "feature index 0 in {tok} in a one-based file: pass zero_based=True "
                       "if the file is zero-based",
    _S.SVM_INDEX_RANGE: "feature index in {tok} is beyond n_features={n_features}",
    _S.SVM_UNSORTED: "feature {tok} is out of order: indices must be strictly increasing",
    _S.SVM_DUPLICATE: "feature {tok} repeats the previous index: indices must be unique",
    _S.SVM_BAD_VALUE: "invalid feature value in {tok}: expected a decimal number "
                      "(no hex, nan or inf)",
    _S.SVM_NONFINITE_VALUE: "feature value in {tok} is out of the range of a double",
    _S.SVM_NON_TEXT: "control or non-ASCII byte in {tok}: svmlight/libsvm text has none "
                     "outside comments (binary data or an unrecognised compression?)",
    _S.SVM_MISSING_QID: "the row starting with {tok} has no qid:<integer> but query_id=True",
}


class SvmlightError(ValueError):
    """A malformed svmlight/libsvm input, located by file and line.

    Attributes
    ----------
    path : str
        The file name (``"<stdin>"`` or the file object's name).
    line : int
        The 1-based line number.
    token : str
        The offending token, its bytes decoded as Latin-1 (empty when the
        problem is the stream itself).
    """

    def __init__(self, path, line, token, message):
        self.path = path
        self.line = line
        self.token = token
        self.message = message
        super().__init__(f"{path}, line {line}: {message}")

    def __reduce__(self):
        return type(self), (self.path, self.line, self.token, self.message)


class SvmlightWarning(UserWarning):
    """Bad lines were skipped (``on_error="skip"``), or the index base was decided by a
    single index 0 (``zero_based="auto"``)."""


SvmlightInfo = namedtuple("SvmlightInfo", "n_samples n_features nnz zero_based classes")
SvmlightInfo.__doc__ = """Summary of an svmlight file from :func:`scan_svmlight`.

Fields: ``n_samples``, ``n_features`` (largest index + 1 after the base
shift), ``nnz``, ``zero_based`` (the base used) and ``classes`` (sorted
distinct labels, a float64 array)."""


def _show(token):
    return repr(token[:60])[1:] + ("..." if len(token) > 60 else "")


class _StreamError(Exception):
    """Reading or decompressing failed; the caller adds the line number."""


class _Prefixed(io.RawIOBase):
    """A read-only stream that first returns ``head`` then reads ``stream``."""

    def __init__(self, head, stream):
        self._head = head
        self._stream = stream

    def readable(self):
        return True

    def readinto(self, b):
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._stream.read(len(b))
        b[:len(data)] = data
        return len(data)


class _Decompressed(io.RawIOBase):
    """A bzip2 or xz input decompressed: concatenated streams are read in turn (as
    ``bzip2 -d`` and ``xz -d`` do) and anything else after the end of a stream is an
    error, where :class:`bz2.BZ2File` and :class:`lzma.LZMAFile` ignore it."""

    def __init__(self, raw, decompressor):
        self._raw = raw
        self._new = decompressor
        self._dec = decompressor()

    def readable(self):
        return True

    def readinto(self, b):
        while True:
            if self._dec.eof:
                block = self._dec.unused_data or self._raw.read(_CHUNK)
                if not block:
                    return 0
                self._dec = self._new()
                try:
                    data = self._dec.decompress(block, len(b))
                except (OSError, lzma.LZMAError):
                    raise _StreamError("trailing data after the compressed stream") from None
            else:
                block = self._raw.read(_CHUNK) if self._dec.needs_input else b""
                if self._dec.needs_input and not block:
                    raise EOFError("the stream ended before its end-of-stream marker")
                data = self._dec.decompress(block, len(b))
            if data:
                b[:len(data)] = data
                return len(data)


class _Source:
    """An opened input: a binary stream of text, decompressed, and its name."""

    def __init__(self, f):
        self._owned = []
        try:
            self._open(f)
        except BaseException:
            self.close()
            raise

    def _open(self, f):
        self.mappable = False       # a regular file this source opened, read as is
        if isinstance(f, (str, os.PathLike)) and os.fspath(f) == "-":
            raw, self.name, suffix = sys.stdin.buffer, "<stdin>", ""
        elif isinstance(f, (str, bytes, os.PathLike)):
            path = os.fsdecode(f)
            raw = open(path, "rb")  # noqa: SIM115 - closed by close()
            self._owned.append(raw)
            self.name, suffix = path, os.path.splitext(path)[1].lower()
        elif hasattr(f, "read"):
            if isinstance(f, io.TextIOBase) or isinstance(f.read(0), str):
                raise TypeError("svmlight input must be a path or a binary file object; "
                                "open the file with mode 'rb'")
            raw = f
            name = getattr(f, "name", None)
            self.name = name if isinstance(name, str) else "<file>"
            suffix = os.path.splitext(self.name)[1].lower()
        else:
            raise TypeError(f"svmlight input must be a path, '-' or a binary file object, "
                            f"not {type(f).__name__}")
        if hasattr(raw, "peek"):
            head = raw.peek(6)[:6]
        else:
            head = raw.read(6)
            raw = io.BufferedReader(_Prefixed(head, raw))
            self._owned.append(raw)
        kind = next((k for magic, k in _MAGIC if head.startswith(magic)), _SUFFIX.get(suffix))
        self.compressed = kind is not None
        self.size = None
        if kind is None and hasattr(raw, "fileno"):
            try:
                st = os.fstat(raw.fileno())
            except (OSError, ValueError):
                st = None
            if st is not None:
                self.size = st.st_size
                self.mappable = raw in self._owned and stat.S_ISREG(st.st_mode) and st.st_size > 0
        if kind == "gz":
            raw = gzip.GzipFile(fileobj=raw, mode="rb")
            self._owned.append(raw)
        elif kind is not None:
            decompressor = bz2.BZ2Decompressor if kind == "bz2" else lzma.LZMADecompressor
            raw = io.BufferedReader(_Decompressed(raw, decompressor), _CHUNK)
            self._owned.append(raw)
        self.stream = raw

    def close(self):
        for obj in reversed(self._owned):
            obj.close()




def _blocks(stream, chunk_size, n_buffers=1):
    """Yield ``(buffer, end)``: ``buffer[:end]`` holds complete lines and ends in b"\\n".

    Reads go into ``n_buffers`` reused bytearrays in turn (fresh large
    allocations per block cost a page fault per 4 KiB), so a block stays
    valid until ``n_buffers - 1`` more blocks have been read: one buffer
    when the consumer parses each block before asking for the next, two
    when a prefetch thread reads one block ahead.
    """
    buffers = [bytearray(chunk_size) for _ in range(n_buffers)]
    carry = b""                     # an incomplete last line
    k = 0                           # blocks yielded: a read without a line end (the rest
    while True:                     # goes to carry) refills the same buffer
        buf = buffers[k % n_buffers]
        want = max(chunk_size, len(carry))     # a line longer than a block: read
        if len(buf) < len(carry) + want:       # geometrically more, not quadratically
            buf = buffers[k % n_buffers] = bytearray(len(carry) + want)
        buf[:len(carry)] = carry
        try:
            n = stream.readinto(memoryview(buf)[len(carry):len(carry) + want])
        except (EOFError, OSError, lzma.LZMAError, zlib.error) as exc:
            raise _StreamError(f"reading failed: the (compressed) stream is truncated or "
                               f"corrupt ({exc})") from exc
        if not n:
            break
        total = len(carry) + n
        end = buf.rfind(b"\n", 0, total) + 1
        carry = bytes(buf[end:total])
        if end:
            yield buf, end
            k += 1
    if carry:
        yield carry + b"\n", len(carry) + 1


def _spans(source, chunk_size, mapped_size=None, prefetch=False):
    """Yield ``(buffer, start, end)``: ``buffer[start:end]`` holds complete lines and
    ends in b"\\n", about ``chunk_size`` bytes of them.

    A regular file the source opened itself, uncompressed, is mapped and the spans
    are ranges of the map, of about ``mapped_size`` bytes (default ``_SPAN_BLOCKS``
    blocks: nothing is copied, and fewer, longer spans take fewer hand-offs between
    the parsing threads); the tokenizer reads the page cache in place, with no copy
    of the file (whose read took about a tenth of a parse), and a span's pages are
    let go of once the caller asks for the next span, so that the process holds one
    span of the file at a time.  Its last line, when it lacks a newline, comes as a
    copy.  Other streams come in :func:`_blocks`, with ``prefetch`` a compressed one
    decompressed a block ahead in a background thread.  (As for any mapped file,
    another process truncating it meanwhile stops this one with SIGBUS.)"""
    if not source.mappable:
        if source.compressed and prefetch:
            blocks = _prefetched(_blocks(source.stream, chunk_size, n_buffers=2))
        else:
            blocks = _blocks(source.stream, chunk_size)
        try:
            for buf, end in blocks:
                yield buf, 0, end
        finally:
            blocks.close()
        return
    try:
        view = mmap.mmap(source.stream.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, OverflowError):    # not mappable after all: read it
        source.mappable = False
        yield from _spans(source, chunk_size)
        return
    try:
        size, a = len(view), 0
        while a < size:
            b = view.find(b"\n", min(a + (mapped_size or _SPAN_BLOCKS * chunk_size), size) - 1) + 1
            if not b:       # no line end after the cut: up to the last one, then the rest
                b = view.rfind(b"\n", a, size) + 1
                if not b:   # (the last line, without its newline: a copy of it alone)
                    yield view[a:] + b"\n", 0, size - a + 1
                    break
            yield view, a, b
            _release(view, a, b)
            a = b
    finally:
        # (closed early, e.g. by Ctrl-C, while the parser's threads still hold a view of
        # the map: it is then unmapped when the last of them lets go)
        with contextlib.suppress(BufferError):
            view.close()


def _release(view, a, b):
    """Unmap the pages of ``view[a:b]`` from this process (they stay in the page cache:
    a later read of them faults them in again)."""
    if hasattr(mmap, "MADV_DONTNEED"):
        a -= a % mmap.PAGESIZE
        view.madvise(mmap.MADV_DONTNEED, a, b - a)


def _block_summaries(source, chunk_size, n_jobs=1):
    """``(block, summary)`` for the blocks of ``source`` in file order: ``summary`` is
    :func:`_core._svm_scan` of the block (None: a token it does not know), ``block`` a
    buffer whose offsets the summary's token positions are.

    A mapped file comes in slices of about ``_MAPPED_SLICE`` bytes, scanned by up to
    ``n_jobs`` threads at once (the scan releases the GIL: the summary, which nothing
    else waits on, takes the cores the parse takes next), the calling thread among them,
    which takes Ctrl-C between two of its slices; each slice's pages are let go of once
    scanned, and the mapping lasts one scan (about 0.07 s of CPU per 300 MB from the
    page cache).  Other streams come as :func:`_spans` reads them."""
    # (a mapped file as one span, its slices cut here; its last line, without a line
    # end, as a copy)
    for buf, begin, end in _spans(source, chunk_size, mapped_size=sys.maxsize):
        if source.mappable and not isinstance(buf, bytes):   # (the copy: bytes)
            yield from _mapped_summaries(buf, begin, end, n_jobs)
        else:
            yield buf, _core._svm_scan(buf, end)


def _mapped_summaries(view, begin, end, n_jobs):
    """:func:`_block_summaries` of ``view[begin:end]`` (complete lines of a mapping)."""
    cuts = [begin]
    while cuts[-1] < end:
        cuts.append(view.find(b"\n", min(cuts[-1] + _MAPPED_SLICE, end) - 1, end) + 1)
    spans = list(itertools.pairwise(cuts))
    summaries = [None] * len(spans)
    claimed = itertools.count()     # (next() of a count is atomic: each slice scanned once)
    failed = []                     # a helper's exception, or True: a slice summarised None

    def work():
        for k in claimed:
            if k >= len(spans) or failed:
                return
            a, b = spans[k]
            with memoryview(view)[a:b] as block:
                summaries[k] = _core._svm_scan(block, b - a)
            _release(view, a, b)
            if summaries[k] is None:
                failed.append(True)

    def helper():
        try:
            work()
        except BaseException as exc:    # handed to the caller
            failed.append(exc)

    threads = [threading.Thread(target=helper, name="cwkit-svmlight-scan", daemon=True)
               for _ in range(min(n_jobs, len(spans)) - 1)]
    try:
        for thread in threads:
            start(thread)
        work()
    finally:
        failed.append(True)         # (the helpers stop after their current slice)
        for thread in threads:
            if thread.ident is not None:
                thread.join()
    for exc in failed:
        if isinstance(exc, BaseException):
            raise exc
    for (a, b), summary in zip(spans, summaries):
        with memoryview(view)[a:b] as block:    # (released before the map closes)
            yield block, summary
        if summary is None:
            return


def _prefetched(iterable, ahead=1):
    """Run ``iterable`` in a background thread, at most ``ahead`` items ahead.

    The worker computes items i + 1, ..., i + ahead while the caller uses item
    i (the GIL is released while reading, decompressing and parsing);
    exceptions are re-raised in the caller.
    """
    items = queue.Queue()
    slots = threading.Semaphore(ahead)
    stop = threading.Event()
    done = object()

    def work():
        it = iter(iterable)
        try:
            while True:
                slots.acquire()
                if stop.is_set():
                    return
                try:
                    item = next(it)
                except StopIteration:
                    items.put((done, None))
                    return
                items.put((item, None))
        except BaseException as exc:   # handed to the caller
            items.put((done, exc))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=work, name="cwkit-svmlight-prefetch", daemon=True)
    try:
        start(worker)       # (in the try: a Ctrl-C pending as it starts stops it too)
        while True:
            item, exc = items.get()
            slots.release()
            if exc is not None:
                raise exc
            if item is done:
                return
            yield item
    finally:
        stop.set()
        slots.release()
        if worker.ident is not None:    # (started)
            worker.join()


def _empty(n, dtype, mapped_from=_MMAP_MIN):
    """An uninitialised array; those of ``mapped_from`` bytes or more on fresh
    anonymous memory.

    numpy asks for transparent huge pages on large arrays; under Linux's
    default policy (defrag=madvise) each new 2 MiB page then waits for
    memory compaction (benchmarks/README.md has the cost).  An anonymous
    mmap gets ordinary pages, zeroed on first write; capacity never written
    is never resident.  The mapping is private (copy-on-write, as numpy's
    own memory): mmap's default, a shared mapping, would let a process
    forked after the load write into the parent's matrix, and its pages
    cost more to fault in.  Such memory also goes back to the system as soon as
    the array is released, where malloc's may stay with the process.
    """
    dtype = np.dtype(dtype)
    if n == 0 or n * dtype.itemsize < mapped_from:
        return np.empty(n, dtype)
    return np.frombuffer(mmap.mmap(-1, n * dtype.itemsize, access=mmap.ACCESS_COPY),
                         dtype=dtype)


def _grown(a, used, n, mapped_from=_MMAP_MIN):
    """An :func:`_empty` array of ``n`` items starting with the first ``used`` of ``a``."""
    out = _empty(n, a.dtype, mapped_from)
    out[:used] = a[:used]
    return out


def _shrunk(a, n):
    """``a[:n]``, in place when ``a`` owns its memory (a view otherwise)."""
    if a.flags.owndata:
        a.resize(n, refcheck=False)
        return a
    return a[:n]


class _Out:
    """Growable CSR output arrays filled by the tokenizer (indices less the parser's
    ``shift``)."""

    mapped_from = _MMAP_MIN     # arrays of this many bytes or more are mapped

    def __init__(self, rows, nnz, multilabel):
        self.data = self._empty(nnz, np.float64)
        self.indices = self._empty(nnz, np.int32)
        self.indptr = self._empty(rows + 1, np.int64)
        self.labels = self._empty(2 * rows if multilabel else rows, np.float64)
        self.label_ptr = self._empty(rows + 1 if multilabel else 1, np.int64)
        self.qids = self._empty(rows, np.int64)
        self.indptr[0] = self.label_ptr[0] = 0
        self.n_rows = self.nnz = self.n_labels = 0
        self.multilabel = multilabel

    def _empty(self, n, dtype):
        return _empty(n, dtype, self.mapped_from)

    def _grown(self, a, used, n):
        return _grown(a, used, n, self.mapped_from)

    def has_room(self, rows, nnz, labels):
        """Whether ``rows`` more rows, ``nnz`` nonzeros and ``labels`` labels fit."""
        return (self.nnz + nnz <= len(self.data) and self.n_rows + rows <= len(self.qids)
                and (not self.multilabel or self.n_labels + labels <= len(self.labels)))

    def grow(self, rows, nnz, labels, max_rows=None):
        """Make room for ``rows`` more rows, ``nnz`` nonzeros and ``labels``
        labels, at least doubling what grows but keeping at most ``max_rows``
        rows.  New arrays are empty and only the filled part is copied, so
        capacity is not resident until used."""
        if self.nnz + nnz > len(self.data):
            n = max(2 * len(self.data), self.nnz + nnz)
            self.data = self._grown(self.data, self.nnz, n)
            self.indices = self._grown(self.indices, self.nnz, n)
        if self.n_rows + rows > len(self.qids):
            n = max(2 * len(self.qids), self.n_rows + rows)
            n = n if max_rows is None else min(n, max_rows)
            self.indptr = self._grown(self.indptr, self.n_rows + 1, n + 1)
            self.qids = self._grown(self.qids, self.n_rows, n)
            if self.multilabel:
                self.label_ptr = self._grown(self.label_ptr, self.n_rows + 1, n + 1)
            else:
                self.labels = self._grown(self.labels, self.n_rows, n)
        if self.multilabel and self.n_labels + labels > len(self.labels):
            n = max(2 * len(self.labels), self.n_labels + labels)
            self.labels = self._grown(self.labels, self.n_labels, n)

    def clear(self):
        """Empty, keeping the capacity (a scratch output reused block after block)."""
        self.n_rows = self.nnz = self.n_labels = 0

    def append(self, src):
        """Append the rows of the ``_Out`` ``src`` (same ``multilabel``)."""
        r, k, a = self.n_rows, src.n_rows, self.nnz
        self.grow(k, src.nnz, src.n_labels)
        self.data[a:a + src.nnz] = src.data[:src.nnz]
        self.indices[a:a + src.nnz] = src.indices[:src.nnz]
        np.add(src.indptr[1:k + 1], a, out=self.indptr[r + 1:r + k + 1])
        self.qids[r:r + k] = src.qids[:k]
        if self.multilabel:
            m = self.n_labels
            np.add(src.label_ptr[1:k + 1], m, out=self.label_ptr[r + 1:r + k + 1])
            self.labels[m:m + src.n_labels] = src.labels[:src.n_labels]
        else:
            self.labels[r:r + k] = src.labels[:k]
        self.n_rows, self.nnz, self.n_labels = r + k, a + src.nnz, self.n_labels + src.n_labels

    def view(self):
        """An output sharing these arrays that a piece is parsed into from the current
        end (its start kept as ``r0``, ``a0``), moved into place by :meth:`take`."""
        v = object.__new__(_Out)
        v.__dict__.update(self.__dict__)
        v.r0, v.a0 = v.n_rows, v.nnz
        return v

    def take(self, v):
        """Append the rows the :meth:`view` ``v`` parsed: moved down over the gap
        between this output's end and where ``v`` started, if any (the bounds of
        :func:`_core._svm_bounds` are exact without blank lines, comments or qids)."""
        r, a, k, m = self.n_rows, self.nnz, v.n_rows - v.r0, v.nnz - v.a0
        if v.a0 != a:
            self.data[a:a + m] = self.data[v.a0:v.a0 + m]
            self.indices[a:a + m] = self.indices[v.a0:v.a0 + m]
            self.indptr[v.r0 + 1:v.r0 + k + 1] -= v.a0 - a
        if v.r0 != r:
            self.indptr[r + 1:r + k + 1] = self.indptr[v.r0 + 1:v.r0 + k + 1]
            self.qids[r:r + k] = self.qids[v.r0:v.r0 + k]
            self.labels[r:r + k] = self.labels[v.r0:v.r0 + k]
        self.n_rows, self.nnz = r + k, a + m

    def trim(self):
        """Shrink to the filled sizes."""
        self.data = _shrunk(self.data, self.nnz)
        self.indices = _shrunk(self.indices, self.nnz)
        self.indptr = _shrunk(self.indptr, self.n_rows + 1)
        self.qids = _shrunk(self.qids, self.n_rows)
        if self.multilabel:
            self.label_ptr = _shrunk(self.label_ptr, self.n_rows + 1)
            self.labels = _shrunk(self.labels, self.n_labels)
        else:
            self.labels = _shrunk(self.labels, self.n_rows)


class _Segmented(_Out):
    """An :class:`_Out` of unknown final size (a stream) that grows without copying:
    when full, its filled arrays are set aside as a segment and new ones, with room
    for an eighth of what was read so far, are filled; :meth:`trim` copies the
    segments into arrays of the final size, releasing each once copied (their memory
    is mapped: it goes back to the system at once).  Memory then peaks at about 1.125
    times the result, where growing by copying into arrays twice as large holds the
    filled part twice."""

    mapped_from = 1 << 16

    def __init__(self, rows, nnz, multilabel):
        super().__init__(rows, nnz, multilabel)
        self.segments = []

    def grow(self, rows, nnz, labels, max_rows=None):
        """Make room as :meth:`_Out.grow` does, in a new segment when this one is full
        and not empty (a row never straddles two)."""
        if self.n_rows and not self.has_room(rows, nnz, labels):
            super().trim()
            self.segments.append(self._arrays())
            room = [max(sum(getattr(p, k) for p in self.segments) // 8, 1 << 12) + more
                    for k, more in (("n_rows", rows), ("nnz", nnz))]
            super().__init__(*room, self.multilabel)
        super().grow(rows, nnz, labels)

    def _arrays(self):
        part = _Out.__new__(_Out)
        part.__dict__.update({k: v for k, v in self.__dict__.items() if k != "segments"})
        return part

    def trim(self):
        """Shrink to the filled sizes: the segments copied, in order, into one array
        each."""
        super().trim()
        if not self.segments:
            return
        parts = [*self.segments, self._arrays()]
        self.segments.clear()       # (views of this output share the list)
        super().__init__(sum(p.n_rows for p in parts), sum(p.nnz for p in parts),
                         self.multilabel)
        if self.multilabel:
            self.labels = self._empty(sum(p.n_labels for p in parts), np.float64)
        parts.reverse()
        while parts:
            self.append(parts.pop())    # (then released: no reference is left)


class _Extreme:
    """The smallest or largest raw index seen, with its line and token."""

    __slots__ = ("line", "token", "value")

    def __init__(self, value):
        self.value, self.line, self.token = value, 0, b""


class _Task:
    """A call handed to a worker thread; :meth:`result` waits for it."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args
        self.value = self.exc = None
        self.done = threading.Event()

    def run(self):
        try:
            self.value = self.fn(*self.args)
        except BaseException as exc:    # handed to the caller
            self.exc = exc
        finally:
            self.done.set()

    def result(self):
        self.done.wait()
        if self.exc is not None:
            raise self.exc
        return self.value


class _Workers:
    """``n`` daemon threads running the calls submitted to them (the GIL is released
    while they parse) until :meth:`close`."""

    def __init__(self, n):
        self.tasks = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._work, name="cwkit-svmlight-parse",
                                         daemon=True) for _ in range(n)]
        try:
            for thread in self.threads:
                start(thread)
        except BaseException:   # (a Ctrl-C pending as one starts: none left waiting)
            self.close()
            raise

    def _work(self):
        while (task := self.tasks.get()) is not None:
            task.run()

    def submit(self, fn, *args):
        task = _Task(fn, args)
        self.tasks.put(task)
        return task

    def close(self):
        """Let the threads end (idle by then: every submitted call has been waited for).

        Not joined: a blocking join in a reader's ``finally`` would widen the window in
        which a Ctrl-C lands there."""
        for _ in self.threads:
            self.tasks.put(None)


class _Piece:
    """The rows of a piece of a block parsed on their own: where it lies in the block,
    its output, the sub-parser that read it (lines, skips counted from the piece's
    start), its index extremes, and the error that stopped it (``on_error="raise"``)."""

    __slots__ = ("direct", "error", "hi", "lo", "out", "parser", "start", "stop")


class _Parser:
    """Feeds blocks to the tokenizer, tracking lines, skips and index extremes.

    With ``n_jobs > 1`` a block is cut at line ends into ``n_jobs`` pieces parsed at
    the same time by as many threads (:meth:`pieces`); their rows, lines, skips and
    errors are then taken in file order (:meth:`absorb`), so the result, and which
    error is raised, is that of one thread reading the block.
    """

    def __init__(self, name, n_features, zero_based, query_id, multilabel, on_error,
                 n_jobs=1):
        self.config = (name, n_features, zero_based, query_id, multilabel, on_error)
        self.n_jobs = n_jobs
        self.share = 1 / n_jobs      # of a block, parsed by the calling thread
        self.workers = None
        self.scratch = []
        self.name = name
        self.multilabel = multilabel
        self.query_id = query_id
        self.skip = on_error == "skip"
        self.n_features = n_features
        self.min_idx = 1 if zero_based is False else 0
        # stored indices are the raw ones less this: the columns of a one-based file
        # (and, until the base is known, of one with zero_based="auto": see unshift)
        self.shift = 0 if zero_based is True else 1
        if n_features is None:
            self.max_idx = _INT32_MAX
        else:
            self.max_idx = n_features - (1 if zero_based is True else 0)
        self.line = 0                 # complete lines consumed so far
        self.skipped = 0
        self.first_skip = None

    def error(self, status, line, token):
        message = _EXPECTED[status].format(tok=_show(token), n_features=self.n_features)
        return SvmlightError(self.name, line, token.decode("latin-1"), message)

    def stream_error(self, exc):
        return SvmlightError(self.name, self.line + 1, "", str(exc))

    def parse(self, buf, end, out, lo, hi, pos=0, row_limit=None):
        """Parse ``buf[pos:end]`` into ``out``; update the extremes ``lo``, ``hi``.

        Returns where parsing stopped: ``end``, or with ``row_limit`` the
        start of the first row that would exceed ``row_limit`` rows in
        ``out`` (the tokenizer is given row arrays cut to that many rows, whatever
        capacity ``out`` has).
        """
        while True:
            indptr, labels, label_ptr, qids = out.indptr, out.labels, out.label_ptr, out.qids
            if row_limit is not None:
                indptr, qids = indptr[:row_limit + 1], qids[:row_limit]
                if self.multilabel:
                    label_ptr = label_ptr[:row_limit + 1]
                else:
                    labels = labels[:row_limit]
            status, out.n_rows, out.nnz, out.n_labels, mn, mx, err = _core._svm_parse(
                buf, pos, end, out.data, out.indices, indptr, labels, label_ptr, qids,
                out.n_rows, out.nnz, out.n_labels, self.min_idx, self.max_idx,
                self.multilabel, self.query_id, self.shift)
            lines, tok_start, tok_end, resume = err
            if mn[0] < lo.value:
                lo.value, lo.line = mn[0], self.line + mn[1] + 1
                lo.token = _TOKEN.match(buf, mn[2]).group()
            if mx[0] > hi.value:
                hi.value, hi.line = mx[0], self.line + mx[1] + 1
                hi.token = _TOKEN.match(buf, mx[2]).group()
            self.line += lines
            if status == _S.SVM_OK:
                return end
            pos = resume
            if status == _S.SVM_CAPACITY:
                if row_limit is not None and out.n_rows >= row_limit:
                    return pos
                line = bytes(buf[pos:buf.find(b"\n", pos)])
                out.grow(1, line.count(b":"), line.count(b",") + 1, max_rows=row_limit)
                continue
            exc = self.error(status, self.line + 1, bytes(buf[tok_start:tok_end]))
            if not self.skip:
                raise exc
            self.skipped += 1
            self.first_skip = self.first_skip or exc
            self.line += 1

    def unshift(self, out):
        """Make the indices of ``out`` raw again: the file turned out zero-based."""
        if self.shift:
            out.indices += self.shift

    def _fork(self):
        """A parser of the same options counting lines and skips from 0."""
        return _Parser(*self.config)

    def _parse_piece(self, buf, start, stop, out, direct=False):
        piece = _Piece()
        piece.start, piece.stop, piece.out, piece.direct = start, stop, out, direct
        piece.parser = self._fork()
        piece.lo, piece.hi = _Extreme(2**31), _Extreme(-1)
        piece.error = None
        if not direct:
            out.clear()
        try:
            piece.parser.parse(buf, stop, out, piece.lo, piece.hi, start)
        except SvmlightError as exc:
            piece.error = exc
        return piece

    def pieces(self, buf, end, first=None, lo=None, hi=None, begin=0):
        """Parse ``buf[begin:end]`` in up to ``n_jobs`` pieces cut at line ends, at the same
        time; return the :class:`_Piece` objects in file order, to :meth:`absorb`.

        With ``first`` (an ``_Out``) the first piece is parsed by this parser into it
        (updating ``lo`` and ``hi``; its error is raised after the other pieces are
        done) and is not returned.  Without ``multilabel`` the others are parsed
        straight into ``first`` too (``piece.direct``), each from the bounds on the rows
        and nonzeros of the pieces before it (:func:`_core._svm_bounds`), and are then
        moved over the gaps the bounds left, usually none (:meth:`_Out.take`).
        Otherwise they go into scratch outputs reused from block to block: memory is
        bounded by the block size.
        """
        n = min(self.n_jobs, max(1, (end - begin) // _PIECE_MIN))
        cuts = [begin]
        for k in range(1, n):
            at = begin + int((end - begin) * (self.share + (1 - self.share) * (k - 1) / (n - 1)))
            cut = buf.find(b"\n", max(at, cuts[-1], begin + 1) - 1, end) + 1
            if cut < end:       # (buf[end - 1] is b"\n": find succeeds)
                cuts.append(cut)
        cuts = [*dict.fromkeys(cuts), end]
        if len(cuts) == 2 and first is None:    # one piece: left to the caller to parse
            piece = _Piece()
            piece.start, piece.stop, piece.out, piece.error = begin, end, None, None
            piece.direct = False
            return [piece]
        if self.workers is None and len(cuts) > 2:
            self.workers = _Workers(self.n_jobs - 1)
        if first is not None and not self.multilabel and len(cuts) > 2:
            # the last piece's bounds from its size (a row takes 2 bytes or more, a
            # nonzero 4: " i:v"), or counted when those do not fit (a new segment)
            bounds = [_core._svm_bounds(buf, a, b) for a, b in itertools.pairwise(cuts[:-1])]
            last = end - cuts[-2]
            rows, nnz = (sum(b[k] for b in bounds) for k in (0, 1))
            more = (last // 2 + 1, last // 4 + 1)
            if not first.has_room(rows + more[0], nnz + more[1], 0):
                more = _core._svm_bounds(buf, cuts[-2], end)
            first.grow(rows + more[0], nnz + more[1], 0)
            views = [first.view()]
            for rows, nnz in bounds:
                views.append(views[-1].view())
                views[-1].n_rows = views[-1].r0 = views[-2].r0 + rows
                views[-1].nnz = views[-1].a0 = views[-2].a0 + nnz
            tasks = [self.workers.submit(self._parse_piece, buf, a, b, views[k], True)
                     for k, (a, b) in enumerate(itertools.pairwise(cuts)) if k > 0]
        else:
            while len(self.scratch) < len(cuts) - 1:
                self.scratch.append(_Out(1 << 12, 1 << 16, self.multilabel))
            tasks = [self.workers.submit(self._parse_piece, buf, a, b, self.scratch[k])
                     for k, (a, b) in enumerate(itertools.pairwise(cuts)) if k > 0]
        done = []
        try:
            if first is not None:
                self.parse(buf, cuts[1], first, lo, hi, begin)
            else:
                done = [self._parse_piece(buf, begin, cuts[1], self.scratch[0])]
            # the calling thread's share of the next block: smaller when the others
            # were done before it (it also reads and merges), larger when it waited
            waited = not all(task.done.is_set() for task in tasks)
            self.share = min(max(self.share * (1.05 if waited else 0.95), 0.05), 0.95)
        finally:
            done += [task.result() for task in tasks]
        return done

    def absorb(self, piece, lo, hi):
        """Take the lines, skips, extremes and error of ``piece``, which follows
        what this parser has read (its rows are the caller's to copy)."""
        offset = self.line
        sub = piece.parser
        if piece.lo.value < lo.value:
            lo.value, lo.line, lo.token = piece.lo.value, piece.lo.line + offset, piece.lo.token
        if piece.hi.value > hi.value:
            hi.value, hi.line, hi.token = piece.hi.value, piece.hi.line + offset, piece.hi.token
        self.line += sub.line
        if sub.skipped:
            self.skipped += sub.skipped
            self.first_skip = self.first_skip or _shifted(sub.first_skip, offset)
        if piece.error is not None:
            raise _shifted(piece.error, offset)

    def close(self):
        if self.workers is not None:
            self.workers.close()
            self.workers = None

    def warn_skipped(self):
        if self.skipped:
            warnings.warn(f"{self.name}: skipped {self.skipped} bad line(s); the first: "
                          f"{self.first_skip}", SvmlightWarning, stacklevel=3)


def _shifted(exc, lines):
    """``exc`` (an :class:`SvmlightError`) ``lines`` lines further down."""
    return SvmlightError(exc.path, exc.line + lines, exc.token, exc.message)


def _check_args(n_features, zero_based, dtype, on_error, chunk_size, hash_bits=None):
    """Validate the common arguments; return ``(zero_based, dtype)`` normalised."""
    if hash_bits is not None:
        if isinstance(hash_bits, bool) or not isinstance(hash_bits, (int, np.integer)) \
                or not 1 <= hash_bits <= 31:
            raise ValueError(f"hash_bits must be an int in [1, 31], not {hash_bits!r}")
        if n_features is not None:
            raise ValueError("give n_features or hash_bits, not both (hash_bits=B means "
                             "n_features=2**B)")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) \
            or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int (bytes read at a time), "
                         f"not {chunk_size!r}")
    if isinstance(zero_based, str) and zero_based != "auto" or zero_based not in (
            True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', not {zero_based!r}")
    if zero_based != "auto":
        zero_based = bool(zero_based)
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    if n_features is not None:
        if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
            raise TypeError(f"n_features must be an int or None, not {n_features!r}")
        if not 0 <= n_features <= _INT32_MAX:
            raise ValueError(f"n_features must be in [0, 2**31 - 1], not {n_features}")
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype must be a floating-point type, not {dtype}")
    return zero_based, dtype


def default_jobs(busy=0):
    """The default number of parsing threads: the usable cores less ``busy`` (those
    other threads keep busy meanwhile), at least 1 and at most ``_MAX_JOBS``."""
    return max(1, min(_MAX_JOBS, usable_cores() - busy))


def _check_jobs(n_jobs):
    """The number of parsing threads: ``n_jobs``, or by default the usable cores (at
    most ``_MAX_JOBS``)."""
    if n_jobs is None:
        return default_jobs()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive int or None, not {n_jobs!r}")
    return int(n_jobs)


def _warn_lone_zero(parser, lo, n_zero, n_rows):
    """Warn, naming FILE:LINE, when ``zero_based="auto"`` made a file of several rows
    zero-based because of a single index 0: more likely a one-based file with one bad
    index than a zero-based file whose first column is used once."""
    if n_zero == 1 and n_rows > 1:
        warnings.warn(f"{parser.name}:{lo.line}: the only index 0 of the data ({_show(lo.token)}) "
                      f"makes it zero-based, shifting every other column by one; if the "
                      f"file is one-based that index is an error. Give the base "
                      f"(zero_based=True/False, --zero-based/--one-based) to decide",
                      SvmlightWarning, stacklevel=3)


def _check_base(parser, hi, zero_based):
    """Check the largest index against ``n_features`` once the base is known.

    The tokenizer already enforced the bound for an explicit base; with
    ``"auto"`` it allowed ``n_features`` itself, which a zero-based file
    must not contain.
    """
    if (zero_based and parser.n_features is not None
            and hi.value >= parser.n_features):
        raise parser.error(_S.SVM_INDEX_RANGE, hi.line, hi.token)


def _labels(out):
    if not out.multilabel:
        return out.labels
    ptr = out.label_ptr.tolist()
    flat = out.labels.tolist()
    return [tuple(sorted(flat[a:b])) for a, b in itertools.pairwise(ptr)]


def _csr(out, n_cols, dtype, hash_bits=None):
    """The CSR matrix of ``out`` (indices already shifted to zero-based); with
    ``hash_bits`` every index ``j`` becomes ``j mod 2**hash_bits`` and the entries a row
    then has twice are summed, so that the matrix stays canonical."""
    data = out.data if dtype == np.float64 else out.data.astype(dtype)
    if hash_bits is None:
        return sp.csr_matrix((data, out.indices, out.indptr), shape=(out.n_rows, n_cols),
                             copy=False)
    np.bitwise_and(out.indices, (1 << hash_bits) - 1, out=out.indices)
    X = sp.csr_matrix((data, out.indices, out.indptr), shape=(out.n_rows, 1 << hash_bits),
                      copy=False)
    X.sum_duplicates()
    return X


def load_svmlight(f, n_features=None, zero_based="auto", dtype=np.float64, query_id=False,
                  multilabel=False, on_error="raise", chunk_size=_CHUNK, hash_bits=None,
                  n_jobs=None):
    r"""Read a whole svmlight/libsvm file into a CSR matrix.

    Parameters
    ----------
    f : str, path-like or binary file object
        The input; ``"-"`` reads standard input.  gzip, bzip2 and xz streams
        are decompressed, recognised by their magic bytes or by the suffix
        ``.gz``, ``.bz2``, ``.xz``.
    n_features : int, optional
        Number of columns.  An index beyond it is an error.  By default the
        largest index + 1.
    zero_based : bool or "auto"
        Whether index 0 is the first column.  ``"auto"`` (as scikit-learn's
        ``load_svmlight_file``): the file is zero-based if any index 0
        appears in it, otherwise one-based (libsvm's convention) and every
        index is shifted down by one.
    dtype : floating dtype
        dtype of ``X.data``; values are parsed in double precision and cast.
    query_id : bool
        Also return the ``qid:`` of every row (then every row must have one).
        When False, ``qid:`` fields are accepted and ignored.
    multilabel : bool
        Labels are comma-separated lists (``1,3``; a row may have none);
        ``y`` is then a list of sorted tuples of floats.
    on_error : {"raise", "skip"}
        ``"skip"`` drops malformed lines and reports how many (with the
        first error) in one :class:`SvmlightWarning`.  Errors of the stream
        itself (truncated compression) are always raised.
    chunk_size : int
        Bytes read at a time; it changes speed, never the result.  Memory
        beyond the result is about one block of ``chunk_size`` bytes and
        the rows parsed from it, and the row arrays while parsing (16 bytes
        a row).  A file given by its path (uncompressed) is not read into
        blocks but mapped and parsed in place, 16 blocks at a time, each
        span's pages let go of once it is parsed.  The output of a stream
        whose size is not known beforehand (compressed, or not a file)
        grows in segments of an eighth of what was read, copied into the
        result at the end and released one by one: resident memory then
        peaks at 1.2 to 1.45 times the result, row arrays included.
    hash_bits : int, optional
        Fold the columns into ``2**hash_bits`` (1 to 31): column ``j`` (after
        the base shift) becomes ``j mod 2**hash_bits``, and entries a row
        then has twice are summed (the rows stay canonical CSR).  Memory
        for the columns, and the width of any model trained on them, is
        then bounded by this choice whatever the indices in the file, as
        with Vowpal Wabbit's ``-b``; features ``2**hash_bits`` apart share
        a weight.  Excludes ``n_features``.
    n_jobs : int, optional
        Threads parsing at the same time: each block read is cut at line
        ends into ``n_jobs`` pieces parsed in parallel without the GIL, and
        their rows, line numbers and errors taken in file order, so the
        result, and the error raised (the first in the file), are those of
        one thread.  Each piece is parsed straight into its place in the
        result (offsets from its newlines and ``:`` counted first); the
        calling thread, which also reads, takes a smaller or larger share
        of the next block as it finished after or before the others.  By
        default the usable cores, at most 4; 1 parses in the calling thread
        only.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Canonical CSR (sorted, unique indices).
    y : ndarray of float64, or list of tuples when ``multilabel``
    qid : ndarray of int64
        Only when ``query_id`` is True.

    Raises
    ------
    SvmlightError
        For any malformed line (with the file, the 1-based line and the
        offending token) or a truncated/corrupt compressed stream; no
        partial result is returned.

    Examples
    --------
    >>> import io
    >>> X, y = load_svmlight(io.BytesIO(b"+1 1:0.5 3:2  # a comment\n-1 2:0.25\n"))
    >>> X.toarray()
    array([[0.5 , 0.  , 2.  ],
           [0.  , 0.25, 0.  ]])
    >>> y
    array([ 1., -1.])
    >>> load_svmlight(io.BytesIO(b"1 2:1 1:1\n"))
    Traceback (most recent call last):
    ...
    cwkit.svmlight.SvmlightError: <file>, line 1: feature '1:1' is out of order: ...

    Notes
    -----
    Values equal Python's ``float()`` of their token bit for bit: the
    tokenizer uses Clinger's exact fast path (W. D. Clinger, "How to read
    floating point numbers accurately", PLDI 1990) when the digits fit in
    53 bits and the power of ten is exact, and the C library's correctly
    rounded ``strtod`` otherwise.  Compressed input is decompressed in a
    background thread while the caller's thread parses (one block ahead).

    Results equal scikit-learn's ``load_svmlight_file`` (same index base
    rule, sorted multilabel tuples) except that a file without any feature
    gives zero columns rather than one, a row without ``qid`` is an error
    when ``query_id=True``, and malformed input is reported with its line.
    """
    zero_based, dtype = _check_args(n_features, zero_based, dtype, on_error, chunk_size,
                                    hash_bits)
    n_jobs = _check_jobs(n_jobs)
    source = _Source(f)
    try:
        parser = _Parser(source.name, n_features, zero_based, query_id, multilabel, on_error,
                         n_jobs)
        # Plain files: capacity from the size (a nonzero takes 12 bytes or
        # more of text in practice, a row 64; pages never written are never
        # resident, and trim() returns the rest); decompressed streams grow.
        # Decompression runs in a background thread.
        size = min(source.size or 0, 1 << 30)
        out = _Segmented(size // 64 + (1 << 12), size // 12 + (1 << 16), multilabel)
        lo, hi = _Extreme(2**31), _Extreme(-1)
        blocks = _spans(source, chunk_size, prefetch=True)
        try:
            for buf, begin, end in blocks:
                for piece in parser.pieces(buf, end, out, lo, hi, begin):
                    if piece.direct:
                        out.take(piece.out)
                    else:
                        out.append(piece.out)
                    parser.absorb(piece, lo, hi)
        except _StreamError as exc:
            raise parser.stream_error(exc) from exc.__cause__
        finally:
            blocks.close()
            parser.close()
    finally:
        source.close()
    out.trim()
    if zero_based == "auto":
        zero_based = lo.value == 0
        if zero_based:
            parser.unshift(out)
            _warn_lone_zero(parser, lo, np.count_nonzero(out.indices == 0), out.n_rows)
    _check_base(parser, hi, zero_based)
    n_cols = n_features if n_features is not None else hi.value + (1 if zero_based else 0)
    parser.warn_skipped()
    X = _csr(out, max(n_cols, 0), dtype, hash_bits)
    y = _labels(out)
    return (X, y, out.qids) if query_id else (X, y)


def _batches(source, parser, batch_size, chunk_size, multilabel):
    """Parse straight into batches of ``batch_size`` rows (the last may be
    smaller): yield ``_Out`` objects (indices less ``parser.shift``) carrying their
    extremes (raw)."""
    nnz_guess = 16 * min(batch_size, 1 << 14)
    out = None
    try:
        for buf, begin, end in _spans(source, chunk_size):
            for piece in parser.pieces(buf, end, begin=begin):
                if out is None:
                    # rows grow up to batch_size: a huge batch_size reserves nothing
                    out = _Out(min(batch_size, 1 << 14), nnz_guess, multilabel)
                    out.lo, out.hi = _Extreme(2**31), _Extreme(-1)
                if (piece.out is not None and piece.error is None
                        and out.n_rows + piece.out.n_rows <= batch_size):
                    out.append(piece.out)
                    parser.absorb(piece, out.lo, out.hi)
                    pos = piece.stop
                else:   # it ends a batch (or stops at an error, or is unparsed): read it
                    # here, yielding the full batches before it
                    pos = piece.start
                while True:
                    if out.n_rows == batch_size:
                        nnz_guess = out.nnz + out.nnz // 8 + 64
                        out.trim()
                        yield out
                        out = _Out(min(batch_size, 1 << 14), nnz_guess, multilabel)
                        out.lo, out.hi = _Extreme(2**31), _Extreme(-1)
                    if pos == piece.stop:
                        break
                    pos = parser.parse(buf, piece.stop, out, out.lo, out.hi, pos,
                                       row_limit=batch_size)
        if out is not None and out.n_rows:
            out.trim()
            yield out
    except _StreamError as exc:
        raise parser.stream_error(exc) from exc.__cause__


def iter_svmlight(f, batch_size=4096, n_features=None, zero_based="auto", dtype=np.float64,
                  query_id=False, multilabel=False, on_error="raise", prefetch=True,
                  chunk_size=_CHUNK, hash_bits=None, n_jobs=None):
    r"""Read an svmlight/libsvm file in batches of rows, in bounded memory.

    Parameters
    ----------
    f, dtype, query_id, multilabel, on_error, chunk_size, hash_bits, n_jobs
        As in :func:`load_svmlight` (with ``hash_bits`` every batch is
        ``2**hash_bits`` wide).
    batch_size : int
        Rows per batch (the last batch may be smaller).  Memory is about
        five batches (the one in use and, with ``prefetch``, up to four
        parsed ahead or in the making) and one block of
        ``chunk_size`` bytes with the rows parsed from it (by the
        ``n_jobs`` threads, before they are copied into the batch),
        whatever the file size.
    n_features : int, optional
        Width of every batch; an index beyond it is an error.  When None a
        batch is ``max index seen so far + 1`` wide, so widths never shrink
        but may grow; for a stable width pass ``n_features`` (for example
        from :func:`scan_svmlight`).
    zero_based : bool or "auto"
        ``"auto"`` cannot look at the whole stream before the first batch,
        so it decides from the first batch (zero-based if index 0 appears in
        it, otherwise one-based as libsvm files are) and then holds the
        file to that decision: an index 0 in a later batch of a file judged
        one-based raises :class:`SvmlightError` rather than silently
        shifting columns.  The batches are thus always those of
        :func:`load_svmlight` or an error, never different data; pass the
        base explicitly (or take it from :func:`scan_svmlight`) for files
        whose first batch does not tell.
    prefetch : bool
        Read, decompress and parse the next batches in a background thread
        (the GIL is released) while the caller works on the current one; at
        most four batches ahead, which absorbs the caller's and the
        parser's changes of pace (and the first batch's wait for the
        import of scipy.sparse).

    Yields
    ------
    X : scipy.sparse.csr_matrix of shape (n_rows, width)
    y : ndarray of float64, or list of tuples when ``multilabel``
    qid : ndarray of int64
        Only when ``query_id`` is True.

    Raises
    ------
    SvmlightError
        When a bad line is reached (batches before it have been yielded).

    Examples
    --------
    >>> import io
    >>> text = b"1 1:1\n-1 3:2\n1 2:1\n"
    >>> [(X.shape, y.tolist()) for X, y in iter_svmlight(io.BytesIO(text), batch_size=2)]
    [((2, 3), [1.0, -1.0]), ((1, 3), [1.0])]
    """
    zero_based, dtype = _check_args(n_features, zero_based, dtype, on_error, chunk_size,
                                    hash_bits)
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, not {batch_size!r}")
    return _iter(f, batch_size, n_features, zero_based, dtype, query_id, multilabel, on_error,
                 prefetch, chunk_size, hash_bits, _check_jobs(n_jobs))


def iter_parsed_arrays(f, batch_size, n_features, zero_based, n_jobs):
    """:func:`iter_svmlight`'s batches ``(X, y)`` of float64 values without
    ``hash_bits`` (the rows as the parser checked them: :func:`cwkit._rowdata.parsed_rows`),
    X as :class:`cwkit._rowdata.CSRArrays` rather than a scipy matrix: a reader that
    needs only the arrays does not import scipy.sparse."""
    return _iter(f, batch_size, n_features, zero_based, np.float64, False, False, "raise",
                 True, _CHUNK, None, _check_jobs(n_jobs), arrays=True)


def _iter(f, batch_size, n_features, zero_based, dtype, query_id, multilabel, on_error,
          prefetch, chunk_size, hash_bits, n_jobs, arrays=False):
    source = _Source(f)
    parser = _Parser(source.name, n_features, zero_based, query_id, multilabel, on_error,
                     n_jobs)
    batches = _batches(source, parser, batch_size, chunk_size, multilabel)
    if prefetch:
        batches = _prefetched(batches, _AHEAD)
    width = 0 if n_features is None else n_features
    base = None if zero_based == "auto" else zero_based
    try:
        for out in batches:
            if base is None:            # decided by the first batch
                base = out.lo.value == 0
                if base:
                    parser.unshift(out)
                    _warn_lone_zero(parser, out.lo, np.count_nonzero(out.indices == 0),
                                    out.n_rows)
            elif base:
                parser.unshift(out)
            if base is False and out.lo.value == 0:
                raise parser.error(_S.SVM_ZERO_INDEX, out.lo.line, out.lo.token)
            _check_base(parser, out.hi, base)
            if n_features is None:
                width = max(width, out.hi.value + (1 if base else 0))
            X = (CSRArrays(out.data, out.indices, out.indptr, (out.n_rows, width)) if arrays
                 else _csr(out, width, dtype, hash_bits))
            y = _labels(out)
            yield (X, y, out.qids) if query_id else (X, y)
        parser.warn_skipped()
    finally:
        batches.close()
        parser.close()
        source.close()


def scan_svmlight(f, zero_based="auto", query_id=False, multilabel=False, on_error="raise",
                  chunk_size=_CHUNK, hash_bits=None, n_jobs=None, check=True, labels=True):
    """One pass over a file for its shape, index base and label set.

    For a stable batch width and index base in :func:`iter_svmlight` (as the
    CLI uses it): ``info = scan_svmlight(f)`` then ``iter_svmlight(f,
    n_features=info.n_features, zero_based=info.zero_based)``.  Memory is
    bounded by one block and 8192 rows; the base is decided as
    :func:`load_svmlight` does.

    Parameters
    ----------
    f, zero_based, query_id, multilabel, on_error, chunk_size, n_jobs
        As in :func:`load_svmlight`.
    hash_bits : int, optional
        As in :func:`load_svmlight`: ``n_features`` is then ``2**hash_bits``
        (``nnz`` still counts the entries as the file has them).
    check : bool
        True: every line is parsed and checked, as :func:`load_svmlight`
        does.  False: only what the summary needs is read (each row's label,
        first and last feature index; the rest of a line is skipped by
        ``memchr``), several times faster; ``nnz`` is then None, and a
        malformed line is found only if one of those tokens is malformed
        (then the file is parsed and checked in full, and the error raised
        is the one ``check=True`` raises).  For a reader that parses every
        row afterwards anyway (:func:`iter_svmlight` raises at the first bad
        line), as ``cwkit eval`` does.  On a valid file both give the same
        summary.  Ignored (a full check) with ``query_id``, ``multilabel``
        or ``on_error="skip"``.  An uncompressed file is read through a
        memory mapping, without a copy, 16 MiB at a time by the ``n_jobs``
        threads at once (the pages are the page cache's; a process
        truncating the file meanwhile stops this one with SIGBUS, as with
        any mapped file).
    labels : bool
        False: the label set is not collected (``classes`` is empty), so that memory
        stays bounded whatever the number of distinct labels (regression targets).

    Returns
    -------
    SvmlightInfo
        ``(n_samples, n_features, nnz, zero_based, classes)``.
    """
    zero_based, _ = _check_args(None, zero_based, np.float64, on_error, chunk_size,
                                hash_bits)
    n_jobs = _check_jobs(n_jobs)
    if not check and not (query_id or multilabel or on_error == "skip"):
        info = _quick_scan(f, zero_based, chunk_size, hash_bits, labels, n_jobs)
        if info is not None:
            return info
    source = _Source(f)
    parser = _Parser(source.name, None, zero_based, query_id, multilabel, on_error, n_jobs)
    batches = _batches(source, parser, 8192, chunk_size, multilabel)
    n_rows = nnz = n_zero = 0
    lo, hi = _Extreme(2**31), -1
    classes = np.empty(0)
    try:
        for out in batches:
            n_rows += out.n_rows
            nnz += out.nnz
            n_zero += np.count_nonzero(out.indices == -parser.shift)   # raw index 0
            if out.lo.value < lo.value:
                lo = out.lo
            hi = max(hi, out.hi.value)
            if labels:
                classes = np.union1d(classes, out.labels)
    finally:
        batches.close()
        parser.close()
        source.close()
    parser.warn_skipped()
    base = lo.value == 0 if zero_based == "auto" else zero_based
    if zero_based == "auto" and base:
        _warn_lone_zero(parser, lo, n_zero, n_rows)
    width = max(hi + (1 if base else 0), 0) if hash_bits is None else 1 << hash_bits
    return SvmlightInfo(n_rows, width, nnz, base, classes)


def _quick_scan(f, zero_based, chunk_size, hash_bits, collect=True, n_jobs=1):
    """:func:`scan_svmlight` with ``check=False``: the summary from the labels and the
    first and last index of every row (``nnz`` None), or None when a token it reads is
    not one it knows, or a path cannot be reopened (the caller then parses in full);
    ``collect``: the label set too; ``n_jobs``: the threads scanning a mapped file."""
    if hasattr(f, "read") or isinstance(f, (str, os.PathLike)) and os.fspath(f) == "-":
        return None     # a stream cannot be read a second time
    ahead = _SCANS_AHEAD.pop(os.fspath(f), None)
    source = _Source(f) if ahead is None else ahead.source
    parser = _Parser(source.name, None, zero_based, False, False, "raise")
    n_rows = n_zero = 0
    lo, hi = _Extreme(2**31), _Extreme(-1)
    labels, zero_signs = set(), set()
    try:
        blocks = (_block_summaries(source, chunk_size, n_jobs) if ahead is None
                  else ahead.blocks())
        for buf, summary in blocks:
            if summary is None:
                return None
            rows, lines, zeros, mn, mx, block_labels = summary
            for ext, (value, line, tok), better in ((lo, mn, mn[0] < lo.value),
                                                    (hi, mx, mx[0] > hi.value)):
                if better:
                    ext.value, ext.line = value, parser.line + line + 1
                    ext.token = _TOKEN.match(buf, tok).group()
            n_rows += rows
            n_zero += zeros
            parser.line += lines
            if collect:
                labels.update(block_labels)
                zero_signs.update(math.copysign(1.0, v) for v in block_labels if v == 0)
    except _StreamError:
        return None
    finally:
        source.close()
    if len(zero_signs) == 2 or zero_based is False and lo.value == 0:
        return None     # labels -0.0 and 0.0 (np.union1d keeps one), or a bad index 0
    base = lo.value == 0 if zero_based == "auto" else zero_based
    if zero_based == "auto" and base:
        _warn_lone_zero(parser, lo, n_zero, n_rows)
    width = max(hi.value + (1 if base else 0), 0) if hash_bits is None else 1 << hash_bits
    # (finite values of a set, sorted: np.unique's result, without its import of numpy.ma)
    return SvmlightInfo(n_rows, width, None, base, np.array(sorted(labels), float))


#: quick scans started by `scan_ahead`, by path
_SCANS_AHEAD = {}


class _ScanAhead:
    """The block summaries of a mapped file's quick scan (`_block_summaries`), the
    first of them (which scans every slice) computed on a helper thread."""

    def __init__(self, path, source, n_jobs):
        self.path, self.source = path, source
        self._blocks = _block_summaries(source, _CHUNK, n_jobs)
        self._first = self._error = None
        self._thread = threading.Thread(target=self._run, name="cwkit-svmlight-scan-ahead",
                                        daemon=True)

    def start(self):
        """Start the helper (False where no thread can start)."""
        return try_start(self._thread)

    def _run(self):
        try:
            self._first = next(self._blocks, None)
        except BaseException as exc:    # handed to the caller of `blocks`
            self._error = exc

    def discard(self):
        """Wait for the helper and close the file, unless a scan took this one up (then
        it is that scan's): for a caller that did not scan the file after all."""
        if _SCANS_AHEAD.get(self.path) is self:
            del _SCANS_AHEAD[self.path]
            self._thread.join()
            self._blocks.close()
            self.source.close()

    def blocks(self):
        """`_block_summaries`' items, the first once the helper has it."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        if self._first is not None:
            yield self._first
            yield from self._blocks


def scan_ahead(path, n_jobs=None):
    """Start the quick scan of :func:`scan_svmlight` (``check=False``) of the file
    `path`, `n_jobs` threads reading its slices, on a helper thread, for a caller with
    other work to do first (the command line imports its command's modules meanwhile):
    the next quick scan of `path` takes it up, the summary and any error the same as
    had it started then (the slices' summaries are merged in file order, whatever the
    threads; the checks of the summary, and their warnings, are that scan's).  Returns
    the scan (its ``discard()`` drops it if no scan took it up, so that a later scan
    reads the file as it is then), or None: nothing is started for a file that cannot
    be mapped (compressed, not a regular file, not found: its scan reports it), or
    where no thread can start."""
    n_jobs = _check_jobs(n_jobs)
    try:
        source = _Source(path)
    except (OSError, ValueError):
        return None
    ahead = _ScanAhead(os.fspath(path), source, n_jobs) if source.mappable else None
    if ahead is None or not ahead.start():
        source.close()
        return None
    _SCANS_AHEAD[ahead.path] = ahead
    return ahead


def label_line(f, label):
    """The 1-based line of the first row of ``f`` whose (first) label equals ``label``, or
    None: to name FILE:LINE when a label found by :func:`scan_svmlight` is wrong."""
    source = _Source(f)
    try:
        for number, line in enumerate(source.stream, 1):
            token = line.split(b"#", 1)[0].split(None, 1)[:1]
            if token:
                with contextlib.suppress(ValueError):
                    if float(token[0].split(b",", 1)[0]) == label:
                        return number
    finally:
        source.close()
    return None


def _dump_labels(y, n, multilabel):
    if multilabel:
        rows = [np.asarray(labels, dtype=np.float64).ravel() for labels in y]
        if len(rows) != n:
            raise ValueError(f"y has {len(rows)} label lists for {n} rows of X")
        flat = np.concatenate(rows) if rows else np.empty(0)
        ptr = np.concatenate([[0], np.cumsum([len(r) for r in rows], dtype=np.int64)])
    else:
        flat = np.asarray(y, dtype=np.float64)
        if flat.ndim != 1 or len(flat) != n:
            raise ValueError(f"y must be 1-D with {n} labels (one per row of X), "
                             f"got shape {flat.shape}; pass multilabel=True for label lists")
        ptr = np.arange(n + 1, dtype=np.int64)
    if not np.all(np.isfinite(flat)):
        raise ValueError("y contains nan or inf, which svmlight/libsvm cannot represent")
    return np.ascontiguousarray(flat), ptr


def dump_svmlight(X, y, f, zero_based=False, query_id=None, comment=None, multilabel=False):
    r"""Write a matrix and labels in svmlight/libsvm format.

    Every stored entry of a sparse ``X`` is written (zeros of a dense ``X``
    are not), with indices sorted; values and labels are written with
    Python's shortest repr that round-trips, so :func:`load_svmlight` reads
    back exactly the same doubles.

    Parameters
    ----------
    X : array-like or scipy sparse matrix of shape (n_samples, n_features)
        Finite values; cast to float64 (exact for float32 and smaller
        integers).
    y : array-like of shape (n_samples,), or a sequence of label sequences
        when ``multilabel``.
    f : str, path-like or binary file object
        ``"-"`` writes to standard output; a path ending in ``.gz``,
        ``.bz2`` or ``.xz`` is compressed accordingly.  A path is written
        all or nothing: to a temporary file in the same folder, moved into
        place once complete (:func:`atomic_write`), so an error (a full
        disk, an interrupt) leaves the previous file, or none, never a
        truncated one.  A file object or standard output is written as the
        rows are formatted: after an error it holds the rows written so
        far, and the caller must discard it.
    zero_based : bool
        Write column j as index j (True) or j + 1 (False, libsvm's one-based
        convention).
    query_id : array-like of int, optional
        A ``qid:`` per row.
    comment : str, optional
        Written first, as ``#`` comment lines (UTF-8).
    multilabel : bool
        ``y`` holds a sequence of labels per row, written comma-separated.

    Examples
    --------
    >>> import io
    >>> out = io.BytesIO()
    >>> dump_svmlight([[0.0, 0.1, 2.0]], [1], out)
    >>> out.getvalue()
    b'1 2:0.1 3:2\n'
    """
    if issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=False)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
    else:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        X = sp.csr_matrix(X)
    n = X.shape[0]
    if not np.all(np.isfinite(X.data)):
        row = int(np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0], "right")) - 1
        raise ValueError(f"X contains nan or inf (row {row}), which svmlight/libsvm "
                         "cannot represent")
    labels, label_ptr = _dump_labels(y, n, multilabel)
    if query_id is not None:
        qids = np.asarray(query_id)
        if qids.shape != (n,) or qids.dtype.kind not in "iu":
            raise ValueError(f"query_id must be {n} integers (one per row of X)")
        qids = qids.astype(np.int64)
    else:
        qids = np.zeros(n, np.int64)
    data = np.ascontiguousarray(X.data, dtype=np.float64)
    indptr = X.indptr.astype(np.int64)
    indices = X.indices
    head = b""
    if comment is not None:
        if "\0" in comment:
            raise ValueError("comment must not contain NUL bytes")
        head = "".join(f"# {line}\n" for line in comment.splitlines()).encode("utf-8")
    offset = 0 if zero_based else 1

    def write(target):
        target.write(head)
        start = 0
        while start < n:
            # at most 2**18 nonzeros (unless one row has more) and 2**16 rows
            # per call: a few MiB of text
            stop = int(np.searchsorted(indptr, indptr[start] + (1 << 18), "right")) - 1
            stop = min(max(stop, start + 1), start + (1 << 16), n)
            a, b = indptr[start], indptr[stop]
            target.write(_core._svm_format(
                data[a:b], indices[a:b].astype(np.int64), indptr[start:stop + 1] - a,
                labels, label_ptr[start:stop + 1], qids[start:stop], query_id is not None,
                offset, 0, stop - start))
            start = stop

    _write_to(f, write)


def _write_to(f, write):
    """Call ``write(stream)`` on the binary stream of ``f``: a path is written all or
    nothing (:func:`atomic_write`, compressed by its suffix), ``"-"`` is standard output,
    a file object is written in place."""
    if isinstance(f, (str, os.PathLike)) and os.fspath(f) == "-":
        sys.stdout.flush()          # text already printed goes first
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
    elif isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(f)
        kind = _SUFFIX.get(os.path.splitext(path)[1].lower())

        def to_file(tmp):
            with open(tmp, "wb") as raw:
                if kind is None:
                    write(raw)
                    return
                opener = _OPENERS[kind]
                with opener(fileobj=raw, mode="wb") if kind == "gz" else opener(raw, "wb") \
                        as comp:
                    write(comp)

        atomic_write(path, to_file)
    elif hasattr(f, "write"):
        if isinstance(f, io.TextIOBase):
            raise TypeError("svmlight output must be a binary file object; open it with 'wb'")
        write(f)
        if hasattr(f, "flush"):
            f.flush()
    else:
        raise TypeError(f"svmlight output must be a path, '-' or a binary file object, "
                        f"not {type(f).__name__}")
