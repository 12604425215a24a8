"""Training-state checkpoints (safetensors files; see docs/checkpoints.md).

``save_state`` writes a model, its optimizer, a GradScaler, a DataLoader's
position and the session's random stream to one file, atomically; ``load_state``
restores them (all or nothing: a damaged or foreign file raises CorruptError or
ShapeError and changes nothing), so training continues bit for bit. Each of
the objects may be left out.
"""

from . import capi
from .session import default_session


def _h(obj):
    return None if obj is None else obj._h


def save_state(path, model=None, optimizer=None, scaler=None, loader=None, step=0,
               metadata=None, session=None):
    """Saves the training state to ``path``; ``metadata`` is a string stored as "user"."""
    s = session or (model.session if model is not None else default_session())
    capi.mixp_swig_state_save(s._h, str(path), _h(model), _h(optimizer), _h(scaler), _h(loader),
                              int(step), metadata)


def load_state(path, model=None, optimizer=None, scaler=None, loader=None, session=None):
    """Restores what ``save_state`` wrote into the same kinds of objects; returns the saved step."""
    s = session or (model.session if model is not None else default_session())
    return capi.mixp_swig_state_load(s._h, str(path), _h(model), _h(optimizer), _h(scaler),
                                     _h(loader))
