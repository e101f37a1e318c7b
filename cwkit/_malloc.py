"""glibc's malloc keeps the memory the command line frees, for its next batches.

The command line reads a file in batches of a few MB (values, indices, offsets), freed
once learnt and allocated again for the next batch. glibc gives memory freed at the top
of a heap back to the system beyond a threshold, and serves blocks above a threshold
(adjusted as it goes) with fresh mappings: every batch then found its memory unmapped
and took its page faults again, half of an eval's (about 57,000 of the 200,000-row
synthetic file's, each a fault and a zeroed page: 7% of its CPU). When the package is
imported to run the command line and the environment sets none of glibc's ``MALLOC_``
thresholds, blocks below ``MMAP_THRESHOLD`` come from the heap and the heap keeps up to
``TRIM_THRESHOLD`` of free memory, so that the next batch reuses pages already in
place. Nothing else changes: the same values in the same arrays, and a large array
(from 16 MiB, ``cwkit.svmlight``'s own mappings, or any above ``MMAP_THRESHOLD``) still
goes back to the system when freed. Elsewhere than glibc, or imported any other way,
nothing is done.
"""
import os
import sys

from ._interrupt import launched_as_cli

#: blocks this large and larger are mapped on their own (glibc's M_MMAP_THRESHOLD)
MMAP_THRESHOLD = 32 << 20
#: free memory a heap keeps before it gives its top back (glibc's M_TRIM_THRESHOLD)
TRIM_THRESHOLD = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3    # glibc's malloc.h


def keep_freed_memory():
    """Set glibc's thresholds for the command line (True when set), unless the
    environment sets any ``MALLOC_*_`` variable or a ``glibc.malloc`` tunable."""
    if not (sys.platform.startswith("linux") and launched_as_cli()) or any(
            k.startswith("MALLOC_") and k.endswith("_") for k in os.environ) \
            or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt     # (musl's only says 0)
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


keep_freed_memory()     # on import, before the package's first arrays
