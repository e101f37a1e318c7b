"""Files written all or nothing: to a temporary file in the same folder, then moved into
place (for model files, svmlight files and the command line's outputs)."""
import contextlib
import os
import tempfile
from pathlib import Path


def _file_mode(path):
    """The permission bits a plain ``open(path, "w")`` would leave: those of the file it
    replaces, else 0o666 less the umask."""
    with contextlib.suppress(OSError):
        return os.stat(path).st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path, write):
    """Call ``write(tmp_path)`` then move the file into place; no partial file on error.

    The temporary file is in the folder of ``path``; the file gets the permissions a plain
    ``open(path, "w")`` gives (those of the file it replaces, else the umask's).
    """
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part",
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
