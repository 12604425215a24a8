"""The README's Python loop is examples/python/train_mlp.py, and it trains."""
import os
import pathlib
import re
import subprocess
import sys

SOURCE = pathlib.Path(os.environ.get("MIXP_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3]))


def readme_python_block():
    text = (SOURCE / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_snippet_is_the_example_file():
    example = (SOURCE / "examples" / "python" / "train_mlp.py").read_text()
    assert readme_python_block() == example
    assert len(example.strip().splitlines()) <= 15


def test_the_loop_trains():
    out = subprocess.run([sys.executable, str(SOURCE / "examples" / "python" / "train_mlp.py")],
                         capture_output=True, text=True, timeout=240, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    losses = [float(m) for m in re.findall(r"epoch \d: loss ([0-9.]+) scale 65536", out.stdout)]
    assert len(losses) == 2, out.stdout
    assert losses[1] < 0.5, out.stdout  # chance level is ln(10) = 2.30
