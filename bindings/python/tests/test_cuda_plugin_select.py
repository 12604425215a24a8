"""Which CUDA plugin ``import mixp`` points libmixp's loader at
(mixp/_cuda_plugin.py): an explicit MIXP_BACKEND_PATH wins, then a plugin
inside the mixp package, then the mixp-cuda13 wheel when its version is
mixp's. The wheel is stood in for by a package and its dist-info on
sys.path (the real wheel is installed by the python_cuda_wheel test)."""

import os
import sys

import pytest

import mixp
from mixp import _cuda_plugin


def fake_wheel(tmp_path, version):
    pkg = tmp_path / "mixp_cuda13"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import os\n"
        "def plugin_path():\n"
        "    return os.path.join(os.path.dirname(__file__), 'libmixp_cuda.so')\n"
        "def library_dirs():\n"
        "    return []\n")
    info = tmp_path / f"mixp_cuda13-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: mixp-cuda13\nVersion: {version}\n")
    return pkg


@pytest.fixture
def clean(monkeypatch, tmp_path):
    monkeypatch.delenv(_cuda_plugin.ENV, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mixp_cuda13", raising=False)
    yield tmp_path
    sys.modules.pop("mixp_cuda13", None)


def test_wheel_of_the_same_version_is_used(clean):
    pkg = fake_wheel(clean, mixp.__version__)
    path, why = _cuda_plugin.select(mixp.__version__)
    assert path == str(pkg / "libmixp_cuda.so")
    assert os.environ[_cuda_plugin.ENV] == path
    assert "mixp-cuda13 wheel" in why


def test_wheel_of_another_version_is_left_alone(clean):
    fake_wheel(clean, "0.0.1")
    path, why = _cuda_plugin.select(mixp.__version__)
    assert path is None
    assert _cuda_plugin.ENV not in os.environ
    assert "0.0.1" in why and f"pip install mixp-cuda13=={mixp.__version__}" in why


def test_explicit_path_wins(clean, monkeypatch):
    fake_wheel(clean, mixp.__version__)
    monkeypatch.setenv(_cuda_plugin.ENV, "/opt/elsewhere/libmixp_cuda.so")
    path, why = _cuda_plugin.select(mixp.__version__)
    assert path == "/opt/elsewhere/libmixp_cuda.so"
    assert why.startswith(_cuda_plugin.ENV)


def test_no_wheel(clean):
    path, why = _cuda_plugin.select(mixp.__version__)
    assert path is None and "no mixp-cuda13" in why


def test_build_info_names_the_plugin():
    assert "; cuda plugin: " in mixp.build_info()
