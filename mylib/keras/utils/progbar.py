"""`Progbar`: Keras 3's progress bar for custom loops, drawn by tqdm."""

from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["Progbar"]


def _fmt(avg):
    # Keras's format: 4 decimals, scientific notation for small magnitudes.
    return f"{avg:.4f}" if abs(avg) > 1e-3 else f"{avg:.4e}"


class Progbar:
    """A progress bar for custom training loops, with Keras 3's `update` / `add` API and
    its averaging of metric values; tqdm draws it.

    Each value passed to `update` is averaged over the steps it covers, weighted by the
    number of steps since the previous update (Keras's rule), unless its name is in
    `stateful_metrics` (shown as given); with `stateless_metrics` instead, only those
    names are averaged. The final update (``current >= target``, or ``finalize=True``)
    shows the last value of each metric.

    Args:
      target: the total number of steps (an int), or None if unknown.
      width: the width of the bar, in characters (default 20).
      verbose: 0 silent; 1 a bar redrawn in place; 2 one line when finalized.
      interval: the minimum time between redraws, in seconds (default 0.05).
      stateful_metrics: names whose values are shown as given, not averaged.
      stateless_metrics: names that are averaged (the others shown as given); give at
        most one of the two.
      unit_name: the name of a step in the display (default ``"step"``).

    Raises:
      ValueError: both `stateful_metrics` and `stateless_metrics` given.

    Example::

        bar = keras.utils.Progbar(len(batches))
        for i, (x, y) in enumerate(batches):
            loss = train_step(x, y)
            bar.update(i + 1, values=[("loss", loss)])
    """

    def __init__(self, target, width=20, verbose=1, interval=0.05, stateful_metrics=None,
                 stateless_metrics=None, unit_name="step"):
        if stateful_metrics is not None and stateless_metrics is not None:
            raise ValueError("Only one of `stateful_metrics` or `stateless_metrics` can be "
                             f"provided. Received: stateful_metrics={stateful_metrics}, "
                             f"stateless_metrics={stateless_metrics}")
        self.target = target
        self.width = int(width)
        self.verbose = verbose
        self.interval = float(interval)
        self.unit_name = unit_name
        if stateless_metrics is not None:
            self.stateful_metrics, self.stateless_metrics = None, set(stateless_metrics)
        else:
            self.stateful_metrics = set(stateful_metrics or ())
            self.stateless_metrics = None
        self._seen_so_far = 0
        # name -> [weighted sum, weight], in first-seen order (Keras's layout).
        self._values = {}
        self._values_order = []
        self._start = time.time()
        self._bar = None
        self._finalized = False

    def _averaged(self, name):
        if self.stateful_metrics is not None:
            return name not in self.stateful_metrics
        return name in self.stateless_metrics

    def _postfix(self):
        parts = []
        for k in self._values_order:
            total, count = self._values[k]
            parts.append(f"{k}: {_fmt(float(np.mean(total)) / max(1, count))}")
        return " - ".join(parts)

    def update(self, current, values=None, finalize=None):
        """Moves the bar to step `current` and records `values`.

        Args:
          current: the index of the current step (steps done so far), an int.
          values: a list of ``(name, value)`` pairs, the value for the last step
            (a number or an array, whose mean is shown).
          finalize: whether this is the last update (default ``current >= target``;
            never for an unknown target).
        """
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        for k, v in values or ():
            if k not in self._values_order:
                self._values_order.append(k)
            if self._averaged(k) and not finalize:
                # Weighted by the steps this value stands for (at least one: a repeated
                # `current` still counts).
                n = max(current - self._seen_so_far, 1)
                if k in self._values:
                    self._values[k][0] += v * n
                    self._values[k][1] += n
                else:
                    self._values[k] = [v * n, n]
            else:
                self._values[k] = [v, 1]
        self._seen_so_far = current
        if self.verbose == 1:
            self._draw(current, finalize)
        elif self.verbose == 2 and finalize:
            elapsed = time.time() - self._start
            count = f"{current}/{self.target}" if self.target is not None else f"{current}"
            line = f"{count} - {elapsed:.0f}s"
            if current:
                line += f" - {1000 * elapsed / current:.0f}ms/{self.unit_name}"
            postfix = self._postfix()
            print(line + (f" - {postfix}" if postfix else ""), file=sys.stdout, flush=True)

    def _draw(self, current, finalize):
        if self._bar is None or self._finalized:
            from tqdm.auto import tqdm

            total = self.target if self.target is not None else None
            fmt = ("{n_fmt}/{total_fmt} |{bar:%d}| {elapsed}<{remaining}, {rate_fmt}"
                   "{postfix}" % self.width) if total else \
                "{n_fmt}/Unknown {elapsed}, {rate_fmt}{postfix}"
            self._bar = tqdm(total=total, unit=self.unit_name, file=sys.stdout,
                             mininterval=self.interval, bar_format=fmt, leave=True)
            self._finalized = False
        self._bar.set_postfix_str(self._postfix(), refresh=False)
        self._bar.update(current - self._bar.n)
        if finalize:
            self._bar.close()
            self._finalized = True

    def add(self, n, values=None):
        """`update` to ``steps so far + n``."""
        self.update(self._seen_so_far + n, values)
