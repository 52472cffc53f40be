"""Callbacks that steer or record training: `ReduceLROnPlateau`,
`LearningRateScheduler`, `TerminateOnNaN`, `CSVLogger`.

The learning rate is the optimizer's float32 learning-rate variable (see
`Optimizer.learning_rate`); these callbacks read and assign it in the model's session,
between steps, so the compiled training step is reused unchanged.
"""

from __future__ import annotations

import csv
import math
import os
import warnings

import numpy as np

from mylib.callbacks import Callback, _monitor
from mylib.core.compat_args import init_arg_names, unrecognized_kwargs
from mylib.runtime import keras_session as backend


def _lr_variable(model, who):
    opt = getattr(model, "optimizer", None)
    if opt is None:
        raise ValueError(f"{who} needs a compiled model (with an optimizer).")
    lr = opt.learning_rate
    if not hasattr(lr, "graph"):  # with a schedule: its current rate, not a variable
        sched = getattr(opt, "_learning_rate", None)
        raise TypeError(f"{who}: the optimizer uses a learning-rate schedule ({sched!r}); "
                        "only a float learning rate (a variable) can be changed.")
    return lr


def get_learning_rate(model):
    """The current learning rate of `model`'s optimizer as a float."""

    return float(backend.get_values([_lr_variable(model, "get_learning_rate")])[0])


def set_learning_rate(model, value, who="set_learning_rate"):
    """Assigns `value` to the learning-rate variable of `model`'s optimizer."""

    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{who}: the learning rate must be a finite number >= 0. "
                         f"Received: {value!r}")
    var = _lr_variable(model, who)
    backend.ensure_initialized([var])
    backend.set_values([var], [np.float32(value)], owner=who)


def _mode_is_max(mode, monitor, who):
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{who}: mode must be 'auto', 'min' or 'max'. Received: mode={mode!r}")
    if mode == "auto":  # until `_monitor.resolve_auto_mode` asks the compiled metric
        return _monitor.name_is_max(monitor)
    return mode == "max"


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by `factor` when `monitor` has not improved by more
    than `min_delta` for `patience` epochs; waits `cooldown` epochs after a reduction
    before counting again; never goes below `min_lr`. Adds ``learning_rate`` to the
    epoch logs (Keras 3). ``epsilon=`` (Keras 2's name of `min_delta`) is accepted as
    `min_delta`; any other keyword argument raises `TypeError`."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0, **kwargs):
        if "epsilon" in kwargs:
            min_delta = kwargs.pop("epsilon")
        if kwargs:
            raise unrecognized_kwargs("ReduceLROnPlateau", kwargs, init_arg_names(type(self)))
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0. "
                             f"Received: factor={factor}")
        self.monitor, self.factor, self.patience = monitor, float(factor), int(patience)
        self.verbose, self.min_delta, self.cooldown = verbose, float(min_delta), int(cooldown)
        self.min_lr = float(min_lr)
        self._max = _mode_is_max(mode, monitor, "ReduceLROnPlateau")
        self._auto_mode = mode == "auto"
        self.mode = mode
        self._reset()

    def _reset(self):
        self.best = -np.inf if self._max else np.inf
        self.wait = 0
        self.cooldown_counter = 0

    def _improved(self, current):
        if self._max:
            return current > self.best + self.min_delta
        return current < self.best - self.min_delta

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        lr = get_learning_rate(self.model)
        logs["learning_rate"] = lr
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"ReduceLROnPlateau conditioned on metric `{self.monitor}` which is "
                          f"not available. Available metrics are: {','.join(logs)}.",
                          stacklevel=2)
            return
        _monitor.resolve_auto_mode(self)
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(current):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:  # as Keras 3: the epoch ending the cooldown counts
            self.wait += 1
            if self.wait >= self.patience and lr > self.min_lr:
                new_lr = max(lr * self.factor, self.min_lr)
                set_learning_rate(self.model, new_lr, "ReduceLROnPlateau")
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to "
                          f"{new_lr}.")
                self.cooldown_counter = self.cooldown
                self.wait = 0


class LearningRateScheduler(Callback):
    """Sets the learning rate at the start of each epoch to ``schedule(epoch, lr)``
    (or ``schedule(epoch)``), `epoch` counted from 0."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr = get_learning_rate(self.model)
        try:
            new = self.schedule(epoch, lr)
        except TypeError:  # a one-argument schedule (Keras 2)
            new = self.schedule(epoch)
        if not isinstance(new, (float, int, np.floating, np.integer)):
            raise ValueError('The output of the "schedule" function should be a float. '
                             f"Got: {new!r}")
        set_learning_rate(self.model, new, "LearningRateScheduler")
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{float(new)}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = get_learning_rate(self.model)


class TerminateOnNaN(Callback):
    """Stops training as soon as the loss is NaN or infinite, and says at which epoch
    and batch. Reads the loss after every batch (one host sync per step)."""

    def __init__(self):
        super().__init__()
        self._epoch = 0
        self.terminated_at = None  # (epoch, batch), both from 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None:
            return
        value = float(np.asarray(loss))
        if not math.isfinite(value):
            self.terminated_at = (self._epoch, batch)
            print(f"Epoch {self._epoch + 1}, batch {batch}: invalid loss ({value}), "
                  "terminating training.")
            self.model.stop_training = True


def _cell(v):
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple, np.ndarray)) and np.ndim(v) > 0:
        return '"[' + ", ".join(str(x) for x in np.ravel(v)) + ']"'
    return str(float(np.asarray(v))) if np.ndim(v) == 0 and not isinstance(v, (int, bool)) \
        else str(v)


class CSVLogger(Callback):
    """Writes one CSV row per epoch: ``epoch`` then the epoch logs, keys sorted (the
    columns of the first epoch; a later missing value is ``NA``).

    Args:
      filename: the CSV file.
      separator: the column separator.
      append: append to an existing file (without repeating the header) instead of
        overwriting it.
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep, self.append = separator, append
        self.keys = None
        self._file = self._writer = None
        self._header = True

    def on_train_begin(self, logs=None):
        exists = os.path.exists(self.filename) and os.path.getsize(self.filename) > 0
        self._header = not (self.append and exists)
        self._file = open(self.filename, "a" if self.append else "w", newline="",  # noqa: SIM115
                          encoding="utf-8")
        self._writer = None
        self.keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
        if self._writer is None:
            self._writer = csv.writer(self._file, delimiter=self.sep, lineterminator="\n")
            if self._header:
                self._writer.writerow(["epoch"] + self.keys)
        self._writer.writerow([epoch] + [_cell(logs[k]) if k in logs else "NA"
                                         for k in self.keys])
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
        self._file = self._writer = None
