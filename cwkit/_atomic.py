"""Files written all or nothing: to a temporary file in the same folder, then moved into
place (for model files, svmlight files and the command line's outputs).

The temporary file is named after its target, ``<name>.cwkit-unfinished-<host>-<pid>-<random>``,
so that one left behind by a process killed while writing (``kill -9``, a power cut) is
recognised, and the next write to the same target removes those whose process (on this
host) is gone.
"""
import contextlib
import os
import re
import socket
import tempfile
from pathlib import Path

_TAG = ".cwkit-unfinished-"


def _file_mode(path):
    """The permission bits a plain ``open(path, "w")`` would leave: those of the file it
    replaces, else 0o666 less the umask."""
    with contextlib.suppress(OSError):
        return os.stat(path).st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _host():
    """This host's name as it goes into a temporary file's name (no '/', at most 32)."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())[:32] or "host"


def _gone(pid):
    """Whether no process ``pid`` exists (False when it cannot be told: not POSIX, or
    a process of another user)."""
    if os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def remove_stale(path):
    """Remove the temporary files of ``path`` that writers on this host killed before
    they finished left behind (their process is gone); return their names."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    mine = re.compile(re.escape(path.name + _TAG + _host() + "-") + r"(\d+)-[^-]+")
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            match = mine.fullmatch(entry.name)
            if match and _gone(int(match.group(1))):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(entry.name)
    return removed


def atomic_write(path, write):
    """Call ``write(tmp_path)`` then move the file into place; no partial file on error.

    The temporary file is in the folder of ``path``, named
    ``<name>.cwkit-unfinished-<host>-<pid>-<random>``; those a killed writer left behind
    there are removed first.  The file gets the permissions a plain ``open(path, "w")``
    gives (those of the file it replaces, else the umask's).
    """
    path = Path(path)
    remove_stale(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"{path.name}{_TAG}{_host()}-{os.getpid()}-",
                                   dir=path.parent if str(path.parent) else ".")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, _file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
