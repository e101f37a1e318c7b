"""The README's "Streaming" section runs as written, every line of it."""
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _section_code(title):
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_streaming_section_runs(tmp_path, monkeypatch, capsys):
    blocks = _section_code("Streaming")
    assert blocks
    monkeypatch.chdir(tmp_path)     # it saves a model file in the current folder
    namespace = {}
    for code in blocks:
        exec(compile(code, str(README), "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("683 rows, progressive error")
    assert namespace["later"].t_ == 1000 and (tmp_path / "stream.cwk").exists()
