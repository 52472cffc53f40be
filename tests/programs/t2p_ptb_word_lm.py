"""Word-level LSTM language model in the style of TensorFlow models' `ptb_word_lm.py`
(TF1): the reader's `ptb_producer` (a `range_input_producer` index dequeued, the batch
cut from the data with `tf.strided_slice` at run-time bounds and `set_shape`), a
two-layer `MultiRNNCell` of `BasicLSTMCell`s with `DropoutWrapper`s unrolled by hand in
`variable_scope("RNN")`, `contrib.seq2seq.sequence_loss`, `clip_by_global_norm`, a
learning rate assigned through a placeholder, and validation/test copies of the model
built under ``variable_scope("Model", reuse=True)`` with cells made with
``reuse=True``. The state is fed back between steps (`feed_dict` on the LSTM state
tuples). Text: a generated Markov chain instead of PTB."""

import time

import numpy as np

import mylib.compat.v1 as tf


class SmallConfig:
    init_scale = 0.1
    learning_rate = 1.0
    max_grad_norm = 5
    num_layers = 2
    num_steps = 5
    hidden_size = 24
    max_epoch = 3
    max_max_epoch = 4
    keep_prob = 0.9
    lr_decay = 0.5
    batch_size = 8
    vocab_size = 10


def markov_text(n, vocab, seed=0):
    rng = np.random.RandomState(seed)
    trans = rng.dirichlet(np.full(vocab, 0.05), size=vocab)
    seq = [0]
    for _ in range(n - 1):
        seq.append(int(rng.choice(vocab, p=trans[seq[-1]])))
    return seq, trans


def ptb_producer(raw_data, batch_size, num_steps, name=None):
    with tf.name_scope(name, "PTBProducer", [raw_data, batch_size, num_steps]):
        raw_data = tf.convert_to_tensor(raw_data, name="raw_data", dtype=tf.int32)
        data_len = tf.size(raw_data)
        batch_len = data_len // batch_size
        data = tf.reshape(raw_data[0: batch_size * batch_len], [batch_size, batch_len])
        epoch_size = (batch_len - 1) // num_steps
        i = tf.train.range_input_producer(epoch_size, shuffle=False).dequeue()
        x = tf.strided_slice(data, [0, i * num_steps], [batch_size, (i + 1) * num_steps])
        x.set_shape([batch_size, num_steps])
        y = tf.strided_slice(data, [0, i * num_steps + 1],
                             [batch_size, (i + 1) * num_steps + 1])
        y.set_shape([batch_size, num_steps])
        return x, y


class PTBInput:
    def __init__(self, config, data, name=None):
        self.batch_size = batch_size = config.batch_size
        self.num_steps = num_steps = config.num_steps
        self.epoch_size = ((len(data) // batch_size) - 1) // num_steps
        self.input_data, self.targets = ptb_producer(data, batch_size, num_steps, name=name)


class PTBModel:
    def __init__(self, is_training, config, input_):
        self.input = input_
        size, vocab_size = config.hidden_size, config.vocab_size
        with tf.device("/cpu:0"):
            embedding = tf.get_variable("embedding", [vocab_size, size], dtype=tf.float32)
            inputs = tf.nn.embedding_lookup(embedding, input_.input_data)
        if is_training and config.keep_prob < 1:
            inputs = tf.nn.dropout(inputs, config.keep_prob)

        def make_cell():
            cell = tf.nn.rnn_cell.BasicLSTMCell(size, forget_bias=0.0, state_is_tuple=True,
                                                reuse=not is_training)
            if is_training and config.keep_prob < 1:
                cell = tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=config.keep_prob)
            return cell

        cell = tf.nn.rnn_cell.MultiRNNCell([make_cell() for _ in range(config.num_layers)],
                                           state_is_tuple=True)
        self.initial_state = cell.zero_state(input_.batch_size, tf.float32)
        state, outputs = self.initial_state, []
        with tf.variable_scope("RNN"):
            for time_step in range(input_.num_steps):
                if time_step > 0:
                    tf.get_variable_scope().reuse_variables()
                cell_output, state = cell(inputs[:, time_step, :], state)
                outputs.append(cell_output)
        output = tf.reshape(tf.concat(outputs, 1), [-1, size])
        softmax_w = tf.get_variable("softmax_w", [size, vocab_size], dtype=tf.float32)
        softmax_b = tf.get_variable("softmax_b", [vocab_size], dtype=tf.float32)
        logits = tf.nn.xw_plus_b(output, softmax_w, softmax_b)
        logits = tf.reshape(logits, [input_.batch_size, input_.num_steps, vocab_size])
        loss = tf.contrib.seq2seq.sequence_loss(
            logits, input_.targets, tf.ones([input_.batch_size, input_.num_steps]),
            average_across_timesteps=False, average_across_batch=True)
        self.cost = tf.reduce_sum(loss)
        self.final_state = state
        if not is_training:
            return
        self.lr = tf.Variable(0.0, trainable=False)
        tvars = tf.trainable_variables()
        grads, _ = tf.clip_by_global_norm(tf.gradients(self.cost, tvars), config.max_grad_norm)
        optimizer = tf.train.GradientDescentOptimizer(self.lr)
        self.train_op = optimizer.apply_gradients(
            zip(grads, tvars), global_step=tf.train.get_or_create_global_step())
        self._new_lr = tf.placeholder(tf.float32, shape=[], name="new_learning_rate")
        self._lr_update = tf.assign(self.lr, self._new_lr)

    def assign_lr(self, session, lr_value):
        session.run(self._lr_update, feed_dict={self._new_lr: lr_value})


def run_epoch(session, model, eval_op=None):
    costs, iters = 0.0, 0
    state = session.run(model.initial_state)
    fetches = {"cost": model.cost, "final_state": model.final_state}
    if eval_op is not None:
        fetches["eval_op"] = eval_op
    for _ in range(model.input.epoch_size):
        feed_dict = {}
        for i, (c, h) in enumerate(model.initial_state):
            feed_dict[c] = state[i].c
            feed_dict[h] = state[i].h
        vals = session.run(fetches, feed_dict)
        state = vals["final_state"]
        costs += vals["cost"]
        iters += model.input.num_steps
    return np.exp(costs / iters)


def main():
    config = SmallConfig()
    eval_config = SmallConfig()
    eval_config.batch_size = eval_config.num_steps = 1
    text, trans = markov_text(3000, config.vocab_size)
    train_data, valid_data = text[:2400], text[2400:]
    t0 = time.time()
    with tf.Graph().as_default():
        tf.set_random_seed(1)  # the test's bounds hold for a run, not for every draw
        initializer = tf.random_uniform_initializer(-config.init_scale, config.init_scale)
        with tf.name_scope("Train"):
            train_input = PTBInput(config=config, data=train_data, name="TrainInput")
            with tf.variable_scope("Model", reuse=None, initializer=initializer):
                m = PTBModel(is_training=True, config=config, input_=train_input)
        n_vars = len(tf.global_variables())
        with tf.name_scope("Valid"):
            valid_input = PTBInput(config=config, data=valid_data, name="ValidInput")
            with tf.variable_scope("Model", reuse=True, initializer=initializer):
                mvalid = PTBModel(is_training=False, config=config, input_=valid_input)
        with tf.name_scope("Test"):
            test_input = PTBInput(config=eval_config, data=valid_data[:120], name="TestInput")
            with tf.variable_scope("Model", reuse=True, initializer=initializer):
                mtest = PTBModel(is_training=False, config=eval_config, input_=test_input)
        shared = len(tf.global_variables()) == n_vars
        history = []
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(session, coord)
            valid_before = run_epoch(session, mvalid)
            for i in range(config.max_max_epoch):
                lr_decay = config.lr_decay ** max(i + 1 - config.max_epoch, 0.0)
                m.assign_lr(session, config.learning_rate * lr_decay)
                lr = session.run(m.lr)
                train_ppl = run_epoch(session, m, eval_op=m.train_op)
                valid_ppl = run_epoch(session, mvalid)
                print(f"Epoch {i + 1} lr {lr:.3f} train {train_ppl:.3f} valid {valid_ppl:.3f}")
                history.append((lr, train_ppl, valid_ppl))
            test_ppl = run_epoch(session, mtest)
            global_step = session.run(tf.train.get_global_step())
            coord.request_stop()
            coord.join(threads)
    print(f"Test perplexity {test_ppl:.3f} ({time.time() - t0:.1f} s)")
    return {"history": history, "valid_before": valid_before, "test": test_ppl,
            "shared": shared, "global_step": global_step, "epoch_size": train_input.epoch_size,
            "trans": trans, "valid_data": valid_data}


if __name__ == "__main__":
    main()
