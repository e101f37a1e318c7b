"""What a command-line user most likely meant: the closest known name, and what a file
that is not svmlight/libsvm data is instead (read only when reading it has failed)."""
import bz2
import difflib
import gzip
import lzma
import re
import zipfile

__all__ = ["did_you_mean", "not_svmlight"]


def did_you_mean(word, choices):
    """``"; did you mean 'x'?"`` with the choice closest to ``word``, or ``""``."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


_COMPRESSED = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))
_BOM = b"\xef\xbb\xbf"
_PAIR = re.compile(rb"(?:^|\s)\S+:\S")     # an svmlight INDEX:VALUE


def _head(path, size=4096):
    """The first ``size`` bytes of the file, decompressed as its magic number says."""
    with open(path, "rb") as f:
        head = f.read(size)
    for magic, opener in _COMPRESSED:
        if head.startswith(magic):
            with opener(path, "rb") as f:
                return f.read(size)
    return head


def not_svmlight(path):
    """Why the file at ``path`` is not svmlight/libsvm data, when it is a kind easily
    mistaken for it: a cwkit model file, another zip archive, text starting with a UTF-8
    byte-order mark, or CSV. None otherwise (and when it cannot be read)."""
    try:
        head = _head(path)
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                if "__meta__.npy" in z.namelist():
                    return (f"{path}: a cwkit model file (written by `cwkit train` or "
                            "cwkit.save), not data: give it to `cwkit predict "
                            f"{path} DATA`")
            return (f"{path}: a zip archive, not svmlight/libsvm data (compressed data "
                    "files may be .gz, .bz2 or .xz)")
    except (OSError, EOFError, ValueError, lzma.LZMAError, zipfile.BadZipFile):
        return None
    if head.startswith(_BOM):
        return (f"{path}:1: the file starts with a UTF-8 byte-order mark (bytes EF BB BF, "
                "written by some Windows editors); svmlight/libsvm files are plain text "
                "without one: remove it, e.g. with `sed -i '1s/^\\xEF\\xBB\\xBF//' FILE`")
    lines = [line for line in head.splitlines()[:2] if line.strip()]
    if lines and b"," in lines[0] and not _PAIR.search(lines[0]):
        return (f"{path}:1: looks like CSV (values separated by commas), not "
                "svmlight/libsvm (`LABEL INDEX:VALUE ...` separated by spaces): convert it "
                "first, e.g. X, y from numpy.loadtxt, then cwkit.dump_svmlight(X, y, "
                "'data.svm')")
    return None
