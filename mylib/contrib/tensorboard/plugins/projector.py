"""TensorBoard's embedding projector configuration (TensorFlow 1's
``tf.contrib.tensorboard.plugins.projector``).

`ProjectorConfig`, `EmbeddingInfo` and `SpriteMetadata` are TensorBoard's own protos
(``tensorboard.plugins.projector.projector_config_pb2``; TensorBoard must be installed:
``pip install 'mylib[tensorboard]'``). `visualize_embeddings`
writes ``projector_config.pbtxt`` into the log directory, where TensorBoard reads it.

Example::

    config = projector.ProjectorConfig()
    emb = config.embeddings.add()
    emb.tensor_name = embedding_var.name
    emb.metadata_path = "metadata.tsv"
    projector.visualize_embeddings(summary_writer, config)
    saver.save(sess, os.path.join(logdir, "model.ckpt"), step)

Differs from TensorFlow: TensorBoard reads embedding values from TensorFlow checkpoints,
and mylib's checkpoints have their own format; so for each embedding with a
`tensor_name` and no `tensor_path`, `visualize_embeddings` reads the tensor from the
mylib checkpoint (`model_checkpoint_path`, else the latest checkpoint in the log
directory, at the time of the call) and writes it as ``<name>.tsv`` beside the config,
setting `tensor_path` and `tensor_shape`: TensorBoard then shows it without TensorFlow.
Call it after saving a checkpoint (or again after a later one) for current values.
"""

from __future__ import annotations

import os
import re

import numpy as np

__all__ = ["ProjectorConfig", "EmbeddingInfo", "SpriteMetadata", "visualize_embeddings",
           "PROJECTOR_FILENAME"]

PROJECTOR_FILENAME = "projector_config.pbtxt"


def _pb2():
    from mylib._optional import require

    return require("tensorboard.plugins.projector.projector_config_pb2",
                   "ml.contrib.tensorboard.plugins.projector", "tensorboard")


def __getattr__(name):
    if name in ("ProjectorConfig", "EmbeddingInfo", "SpriteMetadata"):
        return getattr(_pb2(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _latest_checkpoint(logdir):
    from mylib.runtime.saver import latest_checkpoint

    return latest_checkpoint(logdir)


def _export_tensor(logdir, ckpt, tensor_name):
    from mylib.runtime.saver import list_variables, load_variable

    name = tensor_name[:-2] if tensor_name.endswith(":0") else tensor_name
    names = {n for n, _ in list_variables(ckpt)}
    if name not in names:
        raise ValueError(f"visualize_embeddings: tensor '{tensor_name}' is not in checkpoint "
                         f"'{ckpt}' (it holds {sorted(names)})")
    value = np.asarray(load_variable(ckpt, name))
    if value.ndim != 2:
        raise ValueError(f"visualize_embeddings: tensor '{tensor_name}' must be 2-D "
                         f"[num_points, dims]; got shape {value.shape}")
    fname = re.sub(r"[^\w.-]", "_", name) + ".tsv"
    path = os.path.join(logdir, fname)
    np.savetxt(path, value, delimiter="\t", fmt="%.8g")
    return fname, value.shape


def visualize_embeddings(summary_writer, config):
    """Writes `config` as ``projector_config.pbtxt`` into the log directory.

    Args:
      summary_writer: a `FileWriter` (its log directory is used) or a directory path.
      config: a `ProjectorConfig`.
    Raises:
      ValueError: no log directory; an embedding's tensor missing from the checkpoint
        or not 2-D.
    """
    from google.protobuf import text_format

    logdir = getattr(summary_writer, "get_logdir", lambda: summary_writer)()
    if logdir is None:
        raise ValueError("Expected logdir to be a path, but got None")
    logdir = os.fspath(logdir)
    os.makedirs(logdir, exist_ok=True)
    out = type(config)()
    out.CopyFrom(config)
    pending = [e for e in out.embeddings if e.tensor_name and not e.tensor_path]
    if pending:
        ckpt = out.model_checkpoint_path or _latest_checkpoint(logdir)
        if ckpt:
            for e in pending:
                fname, shape = _export_tensor(logdir, ckpt, e.tensor_name)
                e.tensor_path = fname
                del e.tensor_shape[:]
                e.tensor_shape.extend(int(d) for d in shape)
    path = os.path.join(logdir, PROJECTOR_FILENAME)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text_format.MessageToString(out))
    os.replace(tmp, path)
