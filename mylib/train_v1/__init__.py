"""TensorFlow 1's ``tf.train`` training machinery on mylib's graph: optimizers,
learning-rate schedules, moving averages, synchronous replicas, device setters and
monitored sessions with their hooks. Exported as `mylib.train`."""
