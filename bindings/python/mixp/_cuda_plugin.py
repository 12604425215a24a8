"""Which CUDA backend plugin (``libmixp_cuda.so``) mixp loads from Python.

libmixp's loader tries ``MIXP_BACKEND_PATH`` first, then the folder of
libmixp itself. A wheel install has a third place: the ``mixp-cuda13``
distribution (``pip install mixp-cuda13``), which carries the plugin built
against NVIDIA's PyPI libraries. :func:`select` points the loader at it, by
setting ``MIXP_BACKEND_PATH`` for this process, when nothing closer is there:
an explicit ``MIXP_BACKEND_PATH`` wins, then a plugin inside the mixp package
(a source install built with nvcc), and a mixp-cuda13 of another version is
left alone (the plugin must come from the same build of the op table).
"""

import importlib.metadata
import os

ENV = "MIXP_BACKEND_PATH"
_FILE = "libmixp_cuda.so"


def select(mixp_version):
    """Chooses the plugin; returns ``(path or None, a sentence saying why)``."""
    env = os.environ.get(ENV)
    if env:
        return env, f"{ENV}={env}"
    own = os.path.join(os.path.dirname(os.path.abspath(__file__)), _FILE)
    if os.path.exists(own):
        return own, f"{own} (inside the mixp package)"
    try:
        wheel_version = importlib.metadata.version("mixp-cuda13")
        import mixp_cuda13
    except (importlib.metadata.PackageNotFoundError, ImportError):
        return None, "beside libmixp, if anywhere (no mixp-cuda13 installed)"
    if wheel_version != mixp_version:
        return None, (f"mixp-cuda13 {wheel_version} is installed but mixp is {mixp_version}: "
                      f"not used (pip install mixp-cuda13=={mixp_version})")
    path = mixp_cuda13.plugin_path()
    os.environ[ENV] = path
    return path, f"{path} (the mixp-cuda13 wheel; NVIDIA libraries from " \
                 f"{', '.join(mixp_cuda13.library_dirs()) or 'no nvidia/* folder found'})"
