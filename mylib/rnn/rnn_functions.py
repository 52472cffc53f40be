"""TensorFlow 1's recurrent functions: `dynamic_rnn`, `bidirectional_dynamic_rnn`,
`static_rnn`, `static_bidirectional_rnn`, on the cells of `mylib.rnn.rnn_cell`.

`dynamic_rnn` runs the cell over time with `mylib.scan` (one `lax.scan` in the compiled
step, differentiable). With `sequence_length`, as TF1: outputs past each sequence's
length are zeros and its state stops changing, so the final state is the state at its
length. Dropout of a `DropoutWrapper` inside the loop is drawn before the loop, one
noise slice per step (a loop body that draws random numbers cannot be differentiated).
"""

from __future__ import annotations

from mylib.core import dtypes as _dtypes
from mylib.core.graph import get_default_graph
from mylib.core.op_registry import convert_to_tensor
from mylib.core.ops import array_ops, math_ops, random_ops
from mylib.core.ops.control_flow_ops import scan
from mylib.core.variable_scope import variable_scope
from mylib.rnn.rnn_cell import _map_structure, _step_noise

__all__ = ["dynamic_rnn", "bidirectional_dynamic_rnn", "static_rnn",
           "static_bidirectional_rnn"]


def _transpose_batch_time(x):
    rank = x.shape.rank
    if rank is None or rank < 2:
        raise ValueError(f"dynamic_rnn: inputs must have rank >= 2 ([batch, time, ...]). "
                         f"Received shape {x.shape}")
    return array_ops.transpose(x, [1, 0] + list(range(2, rank)))


def _mask_like(mask, x):
    m = math_ops.cast(mask, x.dtype)
    return array_ops.reshape(m, [-1] + [1] * (x.shape.rank - 1)) if x.shape.rank > 1 else m


def _select(mask, new, old):
    # mask [batch] (float 0/1): new where 1, old where 0; differentiable in both.
    m = _mask_like(mask, new)
    return new * m + old * (1 - m)


def _batch_size(x_tm):
    b = x_tm.shape.as_list()[1]
    return b if b is not None else array_ops.shape(x_tm)[1]


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """Runs `cell` over the time axis of `inputs` (TF1's `tf.nn.dynamic_rnn`).

    Args:
      cell: an `RNNCell` (`BasicLSTMCell`, `GRUCell`, `MultiRNNCell`, ...).
      inputs: float `Tensor` [batch, time, depth] ([time, batch, depth] if
        `time_major`); `depth` must be known.
      sequence_length: optional int `Tensor` [batch]: steps past a sequence's length
        give zero outputs and keep its state.
      initial_state: the cell's state structure (default ``cell.zero_state``; then
        `dtype` or the inputs' dtype).
      time_major: whether `inputs` and the outputs are time-major.
      scope: variable scope of the cell's weights (default ``"rnn"``).
      parallel_iterations, swap_memory: accepted for TF1 compatibility; a compiled scan
        has no use for them.
    Returns:
      ``(outputs, state)``: outputs [batch, time, cell.output_size] (time-major if
      asked), state the final state (per sequence, at its length).
    Raises:
      ValueError: inputs of rank < 2, or an unknown depth.
    """
    inputs = convert_to_tensor(inputs)
    g = get_default_graph()
    with variable_scope(scope or "rnn"):
        x_tm = inputs if time_major else _transpose_batch_time(inputs)
        depth = x_tm.shape.as_list()[-1]
        if depth is None:
            raise ValueError("dynamic_rnn: the last dimension (depth) of the inputs must be "
                             f"known. Received shape {inputs.shape}")
        batch = _batch_size(x_tm)
        dt = x_tm.dtype
        state = initial_state if initial_state is not None else \
            cell.zero_state(batch, _dtypes.as_dtype(dtype) if dtype is not None else dt)
        state = _map_structure(convert_to_tensor, state)
        seq = None if sequence_length is None else \
            math_ops.cast(convert_to_tensor(sequence_length), _dtypes.int32)
        # Dropout noise for every step, drawn outside the loop.
        sites = cell._noise_sites(depth) if hasattr(cell, "_noise_sites") else []
        steps = array_ops.shape(x_tm)[0]
        noise = [random_ops.random_uniform(array_ops.stack([steps, _as_i32(batch), int(n)]),
                                           dtype=dt) for n in sites]
        out0 = _zeros_2d(batch, cell.output_size, dt)
        t0 = convert_to_tensor(0, dtype=_dtypes.int32)

        def step(acc, elems):
            t, _, st = acc
            x_t, noises = elems
            with _step_noise(noises):
                out, new_st = cell(x_t, st)
            if seq is not None:
                alive = math_ops.less(t, seq)
                out = out * _mask_like(alive, out)
                new_st = _map_structure(lambda n, o: _select(alive, n, o), new_st, st)
            return t + 1, out, new_st

        _, outs, states = scan(step, (x_tm, noise), initializer=(t0, out0, state),
                               name="while")
        final = _map_structure(lambda s: s[-1], states)
        outputs = outs if time_major else _transpose_batch_time(outs)
    return outputs, final


def _as_i32(b):
    return b if isinstance(b, int) else math_ops.cast(b, _dtypes.int32)


def _zeros_2d(batch, size, dtype):
    from mylib.core.ops import constant_ops

    if isinstance(batch, int):
        return constant_ops.zeros([batch, int(size)], dtype=dtype)
    return constant_ops.fill(array_ops.stack([_as_i32(batch), int(size)]),
                             constant_ops.constant(0, dtype=dtype))


def _reverse_sequences(x_tm, seq):
    """Reverses each sequence within its length (TF's `reverse_sequence` on the time
    axis of time-major `x_tm` [time, batch, ...]); the padding stays in place."""
    from mylib.core.ops import indexing_ops

    steps = array_ops.shape(x_tm)[0]
    if seq is None:
        seq = array_ops.broadcast_to(steps, array_ops.shape(x_tm)[1:2])

    t = _iota(steps)[:, None]  # [T, 1]
    lens = seq[None, :]  # [1, B]
    src = math_ops.cast(t < lens, _dtypes.int32) * (lens - 1 - t) + \
        math_ops.cast(t >= lens, _dtypes.int32) * t  # [T, B]
    b = _iota(array_ops.shape(x_tm)[1])
    idx = array_ops.stack([src, b[None, :] + 0 * src],
                          axis=-1)
    out = indexing_ops.gather_nd(x_tm, idx)
    out.set_shape(x_tm.shape)  # gather_nd cannot see that the shape is unchanged
    return out


def _iota(n):
    """[0, 1, ..., n - 1] (int32) for a scalar tensor `n` known only at run time."""
    from mylib.core.ops import constant_ops, reduction_ops

    ones = constant_ops.fill(array_ops.stack([n]), constant_ops.constant(1, _dtypes.int32))
    return reduction_ops.cumsum(ones, exclusive=True)


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """TF1's `tf.nn.bidirectional_dynamic_rnn`: `cell_fw` over the inputs and `cell_bw`
    over each sequence reversed within its length (then reversed back), in the scopes
    ``<scope or "bidirectional_rnn">/fw`` and ``/bw``.

    Returns:
      ``((output_fw, output_bw), (state_fw, state_bw))``; outputs as `dynamic_rnn`'s
      (concatenate them on the last axis for the usual [batch, time, 2 units]).
    """
    inputs = convert_to_tensor(inputs)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, st_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw,
                                        dtype, time_major=time_major, scope=fw_scope)
        seq = None if sequence_length is None else \
            math_ops.cast(convert_to_tensor(sequence_length), _dtypes.int32)
        x_tm = inputs if time_major else _transpose_batch_time(inputs)
        with variable_scope("bw") as bw_scope:
            rev = _reverse_sequences(x_tm, seq)
            out_bw, st_bw = dynamic_rnn(cell_bw, rev, sequence_length, initial_state_bw, dtype,
                                        time_major=True, scope=bw_scope)
            out_bw = _reverse_sequences(out_bw, seq)
            if not time_major:
                out_bw = _transpose_batch_time(out_bw)
    return (out_fw, out_bw), (st_fw, st_bw)


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """TF1's `tf.nn.static_rnn`: `inputs` a list of [batch, depth] tensors, one per step.

    Differs from TensorFlow: the steps are not unrolled into the graph; the cell runs in
    one scan over the stacked inputs (as `dynamic_rnn` with ``time_major=True``), which
    gives the same values, weights and variable names (``rnn/<cell>/kernel``) and
    compiles in a fraction of the time (an unrolled 28-step bidirectional LSTM and its
    gradients took over a minute to compile).

    Returns:
      ``(outputs, state)``: a list of [batch, output_size] tensors and the final state
      (per sequence, at its length when `sequence_length` is given).
    Raises:
      TypeError: `inputs` is not a non-empty list.
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("static_rnn: inputs must be a non-empty list of [batch, depth] "
                        f"tensors. Received: {type(inputs).__name__}")
    x_tm = array_ops.stack([convert_to_tensor(x) for x in inputs])
    outs, state = dynamic_rnn(cell, x_tm, sequence_length=sequence_length,
                              initial_state=initial_state, dtype=dtype, time_major=True,
                              scope=scope)
    return array_ops.unstack(outs, num=len(inputs)), state


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """TF1's `tf.nn.static_bidirectional_rnn`: outputs are the per-step concatenations
    ``[fw, bw]``; returns ``(outputs, state_fw, state_bw)``."""
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw:
            out_fw, st_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                       sequence_length, scope=fw)
        with variable_scope("bw") as bw:
            x_tm = array_ops.stack([convert_to_tensor(x) for x in inputs])
            seq = None if sequence_length is None else \
                math_ops.cast(convert_to_tensor(sequence_length), _dtypes.int32)
            rev = array_ops.unstack(_reverse_sequences(x_tm, seq), num=len(inputs))
            out_bw, st_bw = static_rnn(cell_bw, rev, initial_state_bw, dtype, sequence_length,
                                       scope=bw)
            out_bw = array_ops.unstack(_reverse_sequences(array_ops.stack(out_bw), seq),
                                       num=len(inputs))
    outs = [array_ops.concat([f, b], 1) for f, b in zip(out_fw, out_bw)]
    return outs, st_fw, st_bw

