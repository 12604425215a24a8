"""examples/python/fashion_mnist_amp.ipynb runs headless and shows what it says."""
import os
import pathlib
import re

import pytest

SOURCE = pathlib.Path(os.environ.get("MIXP_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3]))


def test_notebook_executes_and_reports(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    import mixp
    # The kernel (Debian's python3 kernelspec) runs in tmp_path: give it the
    # package this test imported, by absolute path.
    package_parent = str(pathlib.Path(mixp.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([package_parent, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(SOURCE / "examples" / "python" / "fashion_mnist_amp.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    source = re.search(r"^(Fashion-MNIST|synthetic): 3000 training and 1000 test images", text, re.M)
    assert source, text
    epochs = re.findall(r"epoch (\d): mean loss ([0-9.]+), scale (\S+)", text)
    assert [e[0] for e in epochs] == ["1", "2"], text
    assert float(epochs[1][1]) < float(epochs[0][1])
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", text).group(1))
    assert accuracy > (0.7 if source.group(1) == "Fashion-MNIST" else 0.9), text
    pngs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if o.get("output_type") == "display_data" and "image/png" in o.get("data", {})]
    assert len(pngs) == 1
