"""Datasets (Fashion-MNIST/IDX, synthetic images, character text) and loaders."""

import os

from . import capi
from ._handle import Handle
from .dtypes import as_dtype, float32
from .session import default_session
from .tensor import Tensor

__all__ = ["Dataset", "DataLoader", "synthetic", "fashion_mnist", "idx", "text"]


class Dataset(Handle):
    """An indexable set of (sample, label) pairs (``mixp_dataset``)."""

    __slots__ = ("_session",)
    _destroy = staticmethod(capi.mixp_dataset_destroy)

    def __init__(self, raw, session):
        super().__init__(raw)
        self._session = session

    @property
    def session(self):
        return self._session

    def __len__(self):
        return capi.mixp_dataset_size(self._h)

    @property
    def num_classes(self):
        return capi.mixp_dataset_num_classes(self._h)

    @property
    def sample_shape(self):
        return capi.mixp_dataset_sample_shape(self._h)

    def subset(self, start, count):
        """A copy of samples [start, start + count)."""
        return Dataset(capi.mixp_dataset_subset(self._h, int(start), int(count)), self._session)

    def vocab(self):
        """The bytes that token ids stand for (text datasets)."""
        buf = bytearray(256)
        n = capi.mixp_dataset_vocab(self._h, buf)
        return bytes(buf[:n])


def synthetic(num_samples=4096, channels=1, height=28, width=28, num_classes=10, seed=1,
              noise=0.35, session=None):
    """A learnable synthetic image classification set (class prototypes plus noise)."""
    s = session or default_session()
    o = capi.mixp_synthetic_options()
    o.num_samples, o.channels, o.height, o.width = num_samples, channels, height, width
    o.num_classes, o.seed, o.noise = num_classes, seed, float(noise)
    return Dataset(capi.mixp_dataset_synthetic(s._h, o), s)


def fashion_mnist(train=True, root=None, session=None):
    """Fashion-MNIST from ``root`` (default: Debian's /usr/share/datasets/fashion-mnist)."""
    s = session or default_session()
    return Dataset(capi.mixp_dataset_fashion_mnist(s._h, None if root is None else os.fspath(root),
                                                   int(bool(train))), s)


def idx(images_path, labels_path, session=None):
    """An IDX image file and its label file (MNIST format, gzip or not)."""
    s = session or default_session()
    return Dataset(capi.mixp_dataset_idx_open(s._h, os.fspath(images_path), os.fspath(labels_path)), s)


def text(path, block_size, session=None):
    """A character-level text dataset (next-token targets)."""
    s = session or default_session()
    return Dataset(capi.mixp_dataset_text(s._h, os.fspath(path), int(block_size)), s)


class DataLoader(Handle):
    """Shuffled mini-batches of a dataset; iterating yields one epoch of ``(inputs, labels)``.

    Inputs are ``dtype`` [B, C, H, W] scaled by ``scale`` then normalised with
    ``mean``/``std`` (int64 token ids for text); labels are int64.

    Data parallelism: ``shard_index``/``shard_count`` (e.g. ``dist.rank`` and
    ``dist.world_size`` of a :class:`mixp.dist.Dist`) make this loader shard
    i of n. Every shard walks the same per-epoch order (same ``seed`` on
    every rank) in global batches of ``shard_count * batch_size`` samples and
    takes its contiguous part of each, so the shards together see every
    sample once per epoch, and every shard yields the same number of batches.
    """

    __slots__ = ("_session", "dataset")
    _destroy = staticmethod(capi.mixp_loader_destroy)

    def __init__(self, dataset, batch_size=64, shuffle=True, drop_last=False, seed=0, dtype=float32,
                 scale=1.0 / 255.0, mean=0.0, std=1.0, shard_index=0, shard_count=1):
        o = capi.mixp_loader_options()
        o.batch_size, o.shuffle, o.drop_last, o.seed = batch_size, int(shuffle), int(drop_last), seed
        o.dtype = int(as_dtype(dtype))
        o.scale, o.mean, o.std = float(scale), float(mean), float(std)
        o.shard_index, o.shard_count = int(shard_index), int(shard_count)
        super().__init__(capi.mixp_loader_create(dataset._h, o))
        self._session = dataset.session
        self.dataset = dataset

    def __len__(self):
        return capi.mixp_loader_num_batches(self._h)

    @property
    def epoch(self):
        return capi.mixp_loader_epoch(self._h)

    def next(self):
        """The next batch, or None at the end of the epoch (the next call starts a new one)."""
        batch = capi.mixp_loader_next(self._h)  # None: MIXP_DONE, both outputs untouched
        if batch is None:
            return None
        x, y = batch
        return Tensor(x, self._session), Tensor(y, self._session)

    def __iter__(self):
        while True:
            batch = self.next()
            if batch is None:
                return
            yield batch
