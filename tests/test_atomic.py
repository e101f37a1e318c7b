"""Files written all or nothing, and the temporary files of writers killed meanwhile."""
import os
import signal
import subprocess
import sys
import time

import pytest

from cwkit._atomic import _host, atomic_write

CHILD = """
import sys, time
from cwkit._atomic import atomic_write

def write(tmp):
    with open(tmp, "w") as f:
        f.write("half")
        f.flush()
        time.sleep(60)      # killed here

atomic_write(sys.argv[1], write)
"""


@pytest.mark.skipif(os.name != "posix", reason="kill -9 and process ids of POSIX")
def test_a_killed_writers_file_is_named_and_the_next_write_removes_it(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("before")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(target)])
    deadline = time.monotonic() + 60
    while not [p for p in tmp_path.iterdir() if p.name != "out.txt" and p.stat().st_size]:
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert target.read_text() == "before" and len(left) == 2
    stale = left[1]
    assert stale.startswith(f"out.txt.cwkit-unfinished-{_host()}-{child.pid}-"), stale
    # another writer still at work (this process), another host's, and a file not ours
    alive = f"out.txt.cwkit-unfinished-{_host()}-{os.getpid()}-abc"
    elsewhere = f"out.txt.cwkit-unfinished-{_host()}x-{child.pid}-abc"
    for name in (alive, elsewhere, "out.txt.cwkit-unfinished-notes", "out.txt.part"):
        (tmp_path / name).write_text("")
    atomic_write(target, lambda tmp: open(tmp, "w").write("after"))  # noqa: SIM115
    assert target.read_text() == "after"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["out.txt", alive, elsewhere, "out.txt.cwkit-unfinished-notes", "out.txt.part"])


def test_a_failed_write_leaves_the_target_and_no_temporary_file(tmp_path):
    target = tmp_path / "m.cwk"
    target.write_text("before")

    def fail(tmp):
        open(tmp, "w").write("half")  # noqa: SIM115
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        atomic_write(target, fail)
    assert [p.name for p in tmp_path.iterdir()] == ["m.cwk"]
    assert target.read_text() == "before"
