"""Keras callbacks: `Callback`, `CallbackList`, `History`, `ProgbarLogger`,
`TensorBoard`, `EarlyStopping`, `LambdaCallback`, `ModelCheckpoint`, `BackupAndRestore`,
`ReduceLROnPlateau`, `LearningRateScheduler`, `TerminateOnNaN`, `CSVLogger`.

Batch-level `logs` hold device arrays (the running epoch means after that step):
reading one as a number waits for the step to finish, so callbacks read them only when
they need to (the progress bar does so at most a few times a second). Epoch-level
`logs` hold floats. With ``compile(steps_per_execution=k)`` the batch hooks run once
per execution of up to k batches: `on_train_batch_begin` with the index of its first
batch, `on_train_batch_end` with the index of its last (as Keras 3).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from mylib.callbacks import _monitor


def _batches_run(cb, batch):
    """How many batches ran since `cb`'s previous `on_train_batch_end` call, given the
    index of the last one (`batch`, from 0 in each epoch): one per call, or up to k
    with ``steps_per_execution=k``."""
    last = getattr(cb, "_last_batch_seen", -1)
    cb._last_batch_seen = batch
    return batch - last if batch > last else batch + 1


class Callback:
    """Base class: override the hooks you need. `self.model` is the model being
    trained; set `self.model.stop_training = True` to stop after the current batch /
    epoch. `self.params` holds `verbose`, `epochs`, `steps`."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): pass
    def on_train_batch_end(self, batch, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass

    # Keras 2 aliases
    def on_batch_begin(self, batch, logs=None): pass
    def on_batch_end(self, batch, logs=None): pass


_HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
          "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
          "on_predict_batch_begin", "on_predict_batch_end")


class CallbackList:
    """Calls each hook on every callback, in order. Adds `History` (which becomes
    `model.history`) and a `ProgbarLogger` when asked, as Keras's fit does."""

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None,
                 **params):
        self.callbacks = list(callbacks or [])
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.insert(0, ProgbarLogger())
        if add_history:
            hist = next((c for c in self.callbacks if isinstance(c, History)), None)
            if hist is None:
                hist = History()
                self.callbacks.append(hist)
            if model is not None:
                model.history = hist
        self.params = params
        for c in self.callbacks:
            if model is not None:
                c.set_model(model)
            c.set_params(params)

    def __iter__(self):
        return iter(self.callbacks)

    def _call(self, name, *args):
        for c in self.callbacks:
            getattr(c, name)(*args)

    def on_train_begin(self, logs=None): self._call("on_train_begin", logs)
    def on_train_end(self, logs=None): self._call("on_train_end", logs)
    def on_epoch_begin(self, epoch, logs=None): self._call("on_epoch_begin", epoch, logs)
    def on_epoch_end(self, epoch, logs=None): self._call("on_epoch_end", epoch, logs)
    def on_test_begin(self, logs=None): self._call("on_test_begin", logs)
    def on_test_end(self, logs=None): self._call("on_test_end", logs)
    def on_predict_begin(self, logs=None): self._call("on_predict_begin", logs)
    def on_predict_end(self, logs=None): self._call("on_predict_end", logs)
    def on_test_batch_begin(self, b, logs=None): self._call("on_test_batch_begin", b, logs)
    def on_test_batch_end(self, b, logs=None): self._call("on_test_batch_end", b, logs)
    def on_predict_batch_begin(self, b, logs=None): self._call("on_predict_batch_begin", b, logs)
    def on_predict_batch_end(self, b, logs=None): self._call("on_predict_batch_end", b, logs)

    def _overriding(self, *names):
        # Per-step hooks cost time on every step: call only the callbacks that
        # override them (as Keras does), in their class or on the instance
        # (`LambdaCallback` sets its functions as instance attributes).
        return [getattr(c, n) for c in self.callbacks for n in names if _overrides(c, n)]

    def _hooking(self, *names):
        """The callbacks that override any of the hooks `names`."""
        return [c for c in self.callbacks if any(_overrides(c, n) for n in names)]

    @property
    def needs_train_batch_hooks(self):
        return bool(self._overriding("on_train_batch_begin", "on_batch_begin",
                                     "on_train_batch_end", "on_batch_end"))

    def on_train_batch_begin(self, b, logs=None):
        hooks = self.__dict__.get("_begin_hooks")
        if hooks is None:
            hooks = self._begin_hooks = self._overriding("on_train_batch_begin",
                                                         "on_batch_begin")
        for h in hooks:
            h(b, logs)

    def on_train_batch_end(self, b, logs=None):
        hooks = self.__dict__.get("_end_hooks")
        if hooks is None:
            hooks = self._end_hooks = self._overriding("on_train_batch_end", "on_batch_end")
        for h in hooks:
            h(b, logs)


class History(Callback):
    """Records the epoch logs: `history` maps each name (``loss``, ``accuracy``,
    ``val_loss``, ...) to its list of per-epoch values; `epoch` lists the epochs."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []
        self.history = {}

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


def _fmt_logs(logs):
    return " - ".join(f"{k}: {_fmt_value(v)}" for k, v in logs.items())


def _fmt_value(v):
    a = np.asarray(v)
    if a.ndim == 0:
        return f"{float(a):.4f}"
    return np.array2string(a.astype(np.float64), precision=4, separator=", ")


class _LineBar:
    """The progress display of `verbose=1` when tqdm cannot be imported: one line per
    epoch (``Epoch 1/3: 10/10 steps - loss: 0.1234``), rewritten in place at most every
    0.2 s on a terminal and printed once, complete, when the epoch ends."""

    def __init__(self, total, desc, file):
        self.n, self.total, self.desc, self.file = 0, total, desc, file
        self._postfix = ""
        isatty = getattr(file, "isatty", None)
        self._tty = bool(isatty and isatty())
        self._shown = 0.0
        self._closed = False

    def _line(self):
        count = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        return f"{self.desc}: {count} steps" + (f" - {self._postfix}" if self._postfix else "")

    def update(self, k=1):
        self.n += k
        if self._tty and time.time() - self._shown >= 0.2:
            self._shown = time.time()
            self.file.write("\r" + self._line())
            self.file.flush()

    def set_postfix_str(self, s, refresh=True):
        self._postfix = s

    def close(self):
        if self._closed:
            return
        self._closed = True
        self.file.write(("\r" if self._tty else "") + self._line() + "\n")
        self.file.flush()


class ProgbarLogger(Callback):
    """`verbose=1`: a tqdm bar per epoch whose count moves every step and whose loss /
    metric values are read at most every `refresh` seconds and at the end of the epoch
    (a plain progress line where tqdm is not installed); `verbose=2`: one line per
    epoch."""

    def __init__(self, refresh=0.5):
        super().__init__()
        self.refresh = refresh
        self._bar = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._t0 = time.time()
        self._last = self._t0
        if self.params.get("verbose", 1) == 1:
            desc = f"Epoch {epoch + 1}/{self.params.get('epochs')}"
            try:
                from tqdm.auto import tqdm
            except ImportError:
                self._bar = _LineBar(self.params.get("steps"), desc, sys.stdout)
                return
            self._bar = tqdm(total=self.params.get("steps"), unit="step", leave=True,
                             desc=desc, file=sys.stdout, dynamic_ncols=True)

    def on_train_batch_end(self, batch, logs=None):
        if self._bar is None:
            return
        self._bar.update(max(batch + 1 - self._bar.n, 1))  # several per execution
        now = time.time()
        if logs and now - self._last >= self.refresh:
            self._last = now
            self._bar.set_postfix_str(_fmt_logs(logs), refresh=False)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._bar is not None:
            self._bar.set_postfix_str(_fmt_logs(logs), refresh=False)
            self._bar.close()
            self._bar = None
        elif self.params.get("verbose") == 2:
            dt = time.time() - self._t0
            print(f"Epoch {epoch + 1}/{self.params.get('epochs')} - {dt:.1f}s - "
                  f"{_fmt_logs(logs)}", flush=True)

    def on_train_end(self, logs=None):
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _overrides(c, name):
    """Whether callback `c` has its own `name` hook (in its class or on itself)."""
    return name in getattr(c, "__dict__", ()) or \
        getattr(type(c), name) is not getattr(Callback, name)


class LambdaCallback(Callback):
    """A callback from functions: ``LambdaCallback(on_epoch_end=lambda e, logs: ...)``."""

    def __init__(self, **hooks):
        super().__init__()
        for name, fn in hooks.items():
            if name not in _HOOKS + ("on_batch_begin", "on_batch_end"):
                raise ValueError(f"Unknown hook {name!r}")
            setattr(self, name, fn)


class EarlyStopping(Callback):
    """Stops training when `monitor` has not improved by more than `min_delta` for
    `patience` epochs; with `restore_best_weights` the weights of the best epoch are
    put back at the end."""

    def __init__(self, monitor="val_loss", min_delta=0.0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, patience, verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self.start_from_epoch = start_from_epoch
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping mode {mode!r} is unknown")
        self.mode = mode
        # "auto": the monitored compiled metric's direction once the model has built
        # its step (`_monitor.resolve_auto_mode`); until then the name rule.
        self._auto_mode = mode == "auto"
        self._max = _monitor.name_is_max(monitor) if mode == "auto" else mode == "max"
        self.min_delta = abs(min_delta)
        self.stopped_epoch = 0

    def _better(self, a, b):
        if b is None:  # the first monitored epoch is the best so far, even NaN (Keras 3)
            return True
        return a - self.min_delta > b if self._max else a + self.min_delta < b

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            import warnings

            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(logs or {})}")
            return
        if epoch < self.start_from_epoch:
            return
        _monitor.resolve_auto_mode(self)
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._better(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._better(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        # Also when training ended for another reason (the epochs ran out), as Keras 3.
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)


from mylib.callbacks.tensorboard import TensorBoard  # noqa: E402,F401
from mylib.callbacks.misc import (  # noqa: E402,F401
    CSVLogger, LearningRateScheduler, ReduceLROnPlateau, TerminateOnNaN)
from mylib.callbacks.checkpoint import BackupAndRestore, ModelCheckpoint  # noqa: E402,F401
