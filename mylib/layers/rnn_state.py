"""The kept state of a stateful recurrent layer (``stateful=True``).

A stateful layer starts each call from the final states of its previous call: sample
``i`` of a batch continues sample ``i`` of the batch before (Keras; TensorFlow's Keras).
The states live in non-trainable variables of shape ``[batch, size]``, one per state,
made when the layer builds; the batch size must therefore be static (``Input(batch_size=
...)``, ``batch_input_shape=`` or ``batch_shape=``). Every call (``fit``, ``evaluate``,
``predict``, a call on arrays) writes its final states back; ``reset_states()`` zeroes
them.

As Keras 3, the state variables are not weights: ``layer.weights``, ``get_weights`` and
saved files do not hold them. Differs from Keras 3 on JAX, whose stateless training and
predict steps drop these writes (its states stay zero); mylib keeps them, as Keras on
TensorFlow does.
"""

from __future__ import annotations

import numpy as np

from mylib.core.graph import get_default_graph
from mylib.core.ops import array_ops, constant_ops, special_ops
from mylib.core.variables import Variable


class StatefulRNNMixin:
    """State variables for `_RNN` and `RNN` (see the module docstring). The layer sets
    ``self.stateful`` and ``self.states = None`` in its constructor."""

    def _build_states(self, batch, templates):
        """Makes the state variables, zeros like the ``[batch, size]`` `templates`
        (static shapes), unless they exist (a rebuild zeroes them, as Keras).

        Raises:
          ValueError: `batch` is not static.
        """
        if self.states is not None:
            self.reset_states()
            return
        if batch is None:
            raise ValueError(
                f'Layer "{self.name}": when using `stateful=True` in a RNN, the batch size '
                "must be static (give `Input(batch_size=...)` or `batch_input_shape=`). "
                f"Found dynamic batch size: batch={batch}")
        made = []
        with get_default_graph().collectable():  # freed with the layer
            for i, t in enumerate(templates):
                shape = [int(batch)] + [int(d) for d in t.shape.as_list()[1:]]
                dtype = t.dtype
                made.append(Variable(
                    lambda shape=shape, dtype=dtype: constant_ops.zeros(shape, dtype),
                    trainable=False, name=f"{self.name}/rnn_state_{i}", dtype=dtype))
        self.states = made

    def _state_batch(self):
        return self.states[0].shape.as_list()[0]

    def _read_states(self, x):
        """``(x, states)``: the sequences `x` ``[batch, time, ...]``, checked to hold the
        states' batch size when the step is compiled for its feeds, and the kept states
        as tensors.

        Raises:
          ValueError: `x`'s static batch size differs from the states'.
          InvalidArgumentError: (when the step is compiled) a fed batch of another size.
        """
        want = self._state_batch()
        batch = x.shape[0]
        if batch is not None and int(batch) != want:
            raise ValueError(
                f'Layer "{self.name}": if an RNN is stateful, the batch size of the input '
                "sequences must be the batch size of its states.\n"
                f"- Expected batch size: {want}\n- Received batch size: {int(batch)}")
        x = special_ops.ensure_shape(x, [want] + [None] * (x.shape.rank - 1),
                                     name="stateful_batch_size")
        return x, [v.value() for v in self.states]

    def _keep_states(self, final, outputs):
        """Writes the `final` states into the state variables; returns `outputs` (a
        tensor or list of them) ordered after the writes, so that whatever reads the
        layer's outputs also keeps its states."""
        g = get_default_graph()
        writes = [v.assign(array_ops.reshape(s, v.shape.as_list()) if
                           s.shape.as_list() != v.shape.as_list() else s, read_value=False)
                  for v, s in zip(self.states, final)]
        def after(o):
            if isinstance(o, (list, tuple)):
                return [after(x) for x in o]
            return array_ops.identity(o)

        with g.control_dependencies(writes):
            return after(outputs)

    def reset_states(self, states=None):
        """Zeroes the kept states (or sets them to `states`: arrays ``[batch, size]``,
        one per state, as Keras 2's ``reset_states(states)``). Does nothing for a layer
        that is not stateful or not built (Keras 3).

        Raises:
          ValueError: `states` has the wrong count or shapes.
        """
        if not getattr(self, "stateful", False) or self.states is None:
            return
        from mylib.runtime import keras_session

        if states is None:
            values = [np.zeros(v.shape.as_list(), v.dtype.np) for v in self.states]
        else:
            given = list(states) if isinstance(states, (list, tuple)) else [states]
            if len(given) != len(self.states):
                raise ValueError(f'Layer "{self.name}" expects {len(self.states)} '
                                 f"state(s); `reset_states` received {len(given)}.")
            values = []
            for v, s in zip(self.states, given):
                a = np.asarray(s, v.dtype.np)
                if list(a.shape) != v.shape.as_list():
                    raise ValueError(
                        f'Layer "{self.name}": state "{v.name}" has shape '
                        f"{tuple(v.shape.as_list())}; `reset_states` received an array "
                        f"of shape {a.shape}.")
                values.append(a)
        keras_session.set_values(self.states, values)

    def reset_state(self):
        """Keras 3's name of `reset_states()`."""
        self.reset_states()
