"""The CUDA 13 backend plugin of mixp (``libmixp_cuda.so``), installed with
NVIDIA's PyPI wheels for cuBLAS(Lt), cuDNN and NCCL.

Nothing to call: ``import mixp`` finds this package and points mixp's loader
at the plugin (unless ``MIXP_BACKEND_PATH`` is set, or the mixp package
carries a plugin of its own), so ``mixp.Session(device="cuda")`` works. The
plugin finds the NVIDIA libraries through its RUNPATH, relative to itself
(``site-packages/nvidia/cu13/lib``, ``nvidia/cudnn/lib``, ``nvidia/nccl/lib``),
never through a system CUDA. ``mixp.build_info()`` says which plugin mixp
uses; a CUDA session's device note says where each library was loaded from.
"""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))

#: Where the NVIDIA wheels put their libraries, relative to site-packages; the
#: plugin's RUNPATH lists the same folders relative to itself.
NVIDIA_LIBRARY_DIRS = ("nvidia/cu13/lib", "nvidia/cudnn/lib", "nvidia/nccl/lib")


def plugin_path():
    """The absolute path of the ``libmixp_cuda.so`` this package installed."""
    return os.path.join(_HERE, "libmixp_cuda.so")


def library_dirs():
    """The NVIDIA library folders of this environment the plugin will search,
    those that exist."""
    site = os.path.dirname(_HERE)
    dirs = [os.path.join(site, d) for d in NVIDIA_LIBRARY_DIRS]
    return [d for d in dirs if os.path.isdir(d)]
