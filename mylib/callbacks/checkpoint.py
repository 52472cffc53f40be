"""`ModelCheckpoint` and `BackupAndRestore`: files written during `fit`.

Both write through the model's own `save` / `save_training_state` (zip files of JSON and numpy arrays, written
atomically), so a run killed while saving leaves the previous file intact.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from mylib.callbacks import Callback, _batches_run
from mylib.callbacks import _monitor
from mylib.callbacks.misc import _mode_is_max
from mylib.callbacks.tensorboard import is_chief
from mylib import errors


def _batch_save_due(cb, batch):
    """Whether `cb` (with an int `save_freq`) saves after training batch `batch`: once
    every `save_freq` batches, counted in ``cb._batches``."""
    if cb.save_freq == "epoch":
        return False
    cb._batches += _batches_run(cb, batch)
    if cb._batches < cb.save_freq:
        return False
    cb._batches = 0
    return True


class ModelCheckpoint(Callback):
    """Saves the model (or its weights) during training.

    Args:
      filepath: the file to write; may hold ``str.format`` fields filled with the
        1-based ``epoch``, ``batch`` (with an integer `save_freq`) and the logs, e.g.
        ``"ckpt/model-{epoch:02d}-{val_loss:.2f}.mylib"``.
      monitor: the log to compare with `save_best_only`.
      save_best_only: save only when `monitor` improved on the best value so far (the
        file is then overwritten unless `filepath` has fields).
      save_weights_only: `model.save_weights` instead of `model.save`.
      mode: ``"auto"``, ``"min"`` or ``"max"``: whether a smaller or larger `monitor`
        is better (auto: larger for accuracies and AUC).
      save_freq: ``"epoch"``, or an int: save every that many batches (the monitored
        value is then the batch logs' running mean).
      initial_value_threshold: `monitor` must beat this for the first save.
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__()
        self.filepath = os.fspath(filepath)
        self.monitor, self.verbose = monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError("Unrecognized save_freq: expected 'epoch' or a positive "
                             f"integer. Received: save_freq={save_freq!r}")
        self.save_freq = save_freq
        self._max = _mode_is_max(mode, monitor, "ModelCheckpoint")
        self._auto_mode = mode == "auto"
        self.best = initial_value_threshold if initial_value_threshold is not None else (
            -np.inf if self._max else np.inf)
        self._batches = 0
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if _batch_save_due(self, batch):
            logs = {k: float(a) if a.ndim == 0 else a
                    for k, a in ((k, np.asarray(v)) for k, v in (logs or {}).items())}
            self._save(self._epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs or {})

    def on_train_end(self, logs=None):
        tmp = getattr(self, "_tmp_dir", None)
        if tmp is not None:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
            self._tmp_dir = None

    def _path(self, epoch, batch, logs):
        fields = dict(logs)
        fields["epoch"] = epoch + 1
        if batch is not None:
            fields["batch"] = batch + 1
        try:
            return self.filepath.format(**fields)
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: no value for {e} in the logs "
                           f"(available: {sorted(fields)}).") from e

    def _save(self, epoch, batch, logs):
        path = self._path(epoch, batch, logs)

        if not is_chief(self.model):
            # Non-chief workers of a multi-worker job write to a temporary location
            # (removed when training ends); the chief writes `filepath`.
            import tempfile

            if getattr(self, "_tmp_dir", None) is None:
                self._tmp_dir = tempfile.mkdtemp(prefix="mylib_ckpt_worker_")
            path = os.path.join(self._tmp_dir, os.path.basename(path))
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                warnings.warn(f"Can save best model only with {self.monitor} available; "
                              f"skipping. Available: {sorted(logs)}", stacklevel=2)
                return
            _monitor.resolve_auto_mode(self)
            better = current > self.best if self._max else current < self.best
            if not better:
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from "
                          f"{self.best:.5f}")
                return
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to "
                      f"{current:.5f}, saving model to {path}")
            self.best = current
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)


class BackupAndRestore(Callback):
    """Makes `fit` resumable after an interruption (a crash, a killed job).

    Saves the weights, the optimizer state (slots, iterations, learning rate), the epoch
    and step reached, numpy's global random state (which orders the shuffles) and the
    session's random-op counter to ``<backup_dir>/training_state.mylib``: after each
    epoch (``save_freq="epoch"``) or every `save_freq` batches. When `fit` starts with
    a backup present, it restores all of that and resumes from the saved epoch and
    step, so the run finishes with the weights an uninterrupted run would have had.
    With `delete_checkpoint`, the backup is deleted when training ends normally.

    Metric totals of an epoch resumed mid-way count only the steps run after the resume.
    """

    FILENAME = "training_state.mylib"

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError("Invalid value for argument `save_freq`: expected 'epoch' or "
                             f"a positive integer. Received: save_freq={save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq, self.delete_checkpoint = save_freq, delete_checkpoint
        self._path = os.path.join(self.backup_dir, self.FILENAME)
        self._batches = 0
        self._epoch = 0
        self._epoch_rng = None

    def on_train_begin(self, logs=None):
        self._batches = 0
        if not os.path.exists(self._path):
            return
        state = {}

        def check(extra):
            state.update(self._parse_state(extra))

        # The backup's state is checked before the weights are loaded, and the weights
        # are loaded all or nothing: a bad backup changes nothing.
        self.model.load_training_state(self._path, validate_extra=check)
        np.random.set_state(state["numpy_rng"])
        # Random ops (dropout) continue their streams: per-op run counts and the
        # session's base seed for unseeded ops.
        self.model.session.variable_store.set_rng_state(state["rng"])
        self.model._resume_at = (state["epoch"], state["step"])

    def _parse_state(self, extra):
        """The checked state in a backup's `extra` dict; DataLossError naming what is
        wrong."""
        def bad(what):
            return errors.DataLossError(f"{self._path}: invalid backup state ({what}); "
                                        "nothing was restored.")

        def count(key, v):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise bad(f"{key} must be a non-negative int, got {v!r:.100}")
            return v

        if not isinstance(extra, dict):
            raise bad(f"expected a dict, got {type(extra).__name__}")
        try:
            epoch, step = count("epoch", extra["epoch"]), count("step", extra["step"])
            name, keys, pos, has_gauss, cached = extra["numpy_rng"]
            rng = (name, np.asarray(keys, dtype=np.uint32), int(pos), int(has_gauss),
                   float(cached))
            if rng[1].shape != (624,):  # MT19937's state
                raise ValueError(f"numpy_rng keys have shape {rng[1].shape}, not (624,)")
            np.random.RandomState().set_state(rng)  # checks it on a scratch generator
        except (KeyError, TypeError, ValueError, OverflowError, IndexError) as e:
            raise bad(f"{type(e).__name__}: {str(e)[:200]}") from None
        counts = extra.get("rng_counts", {})
        if not isinstance(counts, dict) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in counts.values()):
            raise bad(f"rng_counts must map op names to ints, got {str(counts)[:100]}")
        seed = extra.get("seed_base")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise bad(f"seed_base must be an int or null, got {seed!r:.100}")
        return {"epoch": epoch, "step": step, "numpy_rng": rng,
                "rng": {"counts": counts, "seed_base": seed}}

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        # The state fit's shuffle of this epoch draws from: a mid-epoch backup stores it
        # so that the resumed epoch sees the same order.
        self._epoch_rng = np.random.get_state()

    def on_train_batch_end(self, batch, logs=None):
        if _batch_save_due(self, batch):
            steps = self.params.get("steps")
            if steps is not None and batch + 1 >= steps:
                self._save(self._epoch + 1, 0, np.random.get_state())
            else:
                self._save(self._epoch, batch + 1, self._epoch_rng)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch + 1, 0, np.random.get_state())

    def _save(self, epoch, step, rng):
        if not is_chief(self.model):
            # In a multi-worker job only the chief writes the backup; every worker
            # restores from it (the directory must be shared, as TensorFlow's).
            return
        os.makedirs(self.backup_dir, exist_ok=True)
        name, keys, pos, has_gauss, cached = rng
        rng_state = self.model.session.variable_store.rng_state()
        extra = {"epoch": epoch, "step": step,
                 "numpy_rng": [name, [int(k) for k in keys], int(pos), int(has_gauss),
                               float(cached)],
                 "rng_counts": rng_state["counts"], "seed_base": rng_state["seed_base"]}
        self.model.save_training_state(self._path, extra)

    def on_train_end(self, logs=None):

        if self.delete_checkpoint and is_chief(self.model) and os.path.exists(self._path):
            os.remove(self._path)
            try:
                os.rmdir(self.backup_dir)
            except OSError:
                pass

