"""The cyclic garbage collector while the command line starts.

Importing numpy and the package makes about a hundred thousand objects that live as long
as the process; the collections their allocations set off walk them again and again and
free nothing (about 0.02 s of every command's start).  When the package is imported to
run the command line (``cwkit ...``, ``python -m cwkit ...``), the collector is paused
from the package's first lines until :func:`resume`, which the command line calls once
its modules are imported: the objects made so far then go to the permanent generation
(``gc.freeze``), which later collections do not walk, and collecting starts again.
Imported any other way, nothing changes.
"""
import gc

from ._interrupt import launched_as_cli

_paused = False


def pause():
    """Pause the collector for the command line's start (unless it is off already)."""
    global _paused
    if launched_as_cli() and gc.isenabled():
        gc.disable()
        _paused = True


def resume():
    """Freeze what the start made and collect again, if :func:`pause` paused it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


pause()     # on import, the package's second line
