"""An input pipeline as in TensorFlow 1: reader threads fill a shuffling queue, the
training loop dequeues batches, a coordinator stops everything cleanly.

Reader threads (`ml.train.QueueRunner`) run a host op that reads the next chunk of
scikit-learn's handwritten digits and enqueues its examples into a
`RandomShuffleQueue`; each training step dequeues a batch with `dequeue_many`, trains a
softmax regression on it in the same step (the dequeue runs on the host, the model in
XLA) and the `Coordinator` stops the readers after `--steps` steps.

    python examples/queue_pipeline.py [--steps 300] [--batch 64] [--readers 2]
"""

import argparse
import threading
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import mylib as ml


class _Reader:
    """Hands out consecutive chunks of the training set, epoch after epoch (thread-safe:
    several reader threads share it, as TF readers share a filename queue)."""

    def __init__(self, x, y, chunk):
        self.x, self.y, self.chunk = x, y, chunk
        self.pos = 0
        self.lock = threading.Lock()

    def __call__(self):
        with self.lock:
            idx = np.arange(self.pos, self.pos + self.chunk) % len(self.x)
            self.pos = (self.pos + self.chunk) % len(self.x)
        return self.x[idx], self.y[idx]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300, help="training steps")
    p.add_argument("--batch", type=int, default=64, help="batch size")
    p.add_argument("--readers", type=int, default=2, help="reader threads")
    p.add_argument("--lr", type=float, default=0.5, help="learning rate")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    say = (lambda *a: None) if args.quiet else print

    x_all, y_all = load_digits(return_X_y=True)
    x_all = (x_all / 16.0).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x_all, y_all.astype(np.int64), test_size=0.2,
                                              stratify=y_all, random_state=0)
    t0 = time.time()
    g = ml.Graph()
    with g.as_default():
        ml.set_random_seed(0)
        # --- the input pipeline ---
        queue = ml.RandomShuffleQueue(capacity=1000, min_after_dequeue=200,
                                      dtypes=[ml.float32, ml.int64], shapes=[[64], []],
                                      name="examples")
        read = _Reader(x_tr, y_tr, chunk=32)
        images, labels_in = ml.py_func(read, [], [ml.float32, ml.int64])
        images.set_shape([None, 64])
        labels_in.set_shape([None])
        enqueue = queue.enqueue_many([images, labels_in])
        ml.train.add_queue_runner(ml.train.QueueRunner(queue, [enqueue] * args.readers))
        x, labels = queue.dequeue_many(args.batch)                   # [batch, 64], [batch]

        # --- the model: softmax regression ---
        w = ml.Variable(np.zeros((64, 10), np.float32), name="w")
        b = ml.Variable(np.zeros((10,), np.float32), name="b")
        logits = ml.matmul(x, w) + b
        loss = ml.reduce_mean(
            ml.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grad_w, grad_b = ml.gradients(loss, [w, b])
        train = ml.group(w.assign_sub(args.lr * grad_w), b.assign_sub(args.lr * grad_b))
        # Evaluation reads placeholders: the batch tensors have a static [batch] axis.
        x_eval = ml.placeholder(ml.float32, [None, 64])
        y_eval = ml.placeholder(ml.int64, [None])
        accuracy = ml.reduce_mean(ml.cast(
            ml.equal(ml.argmax(ml.matmul(x_eval, w) + b, axis=1), y_eval), ml.float32))

    with ml.Session(graph=g) as sess:
        sess.run(ml.global_variables_initializer())
        coord = ml.train.Coordinator()
        threads = ml.train.start_queue_runners(sess, coord)
        step = sess.make_callable([train, loss])
        # Bound every step: a stalled pipeline fails instead of hanging.
        opts = ml.RunOptions(timeout_in_ms=10_000)
        loss_value = float("nan")
        try:
            for i in range(args.steps):
                if coord.should_stop():
                    break
                _, loss_value = step(options=opts)
                if i % 100 == 0 or i == args.steps - 1:
                    say(f"step {i:4d}  loss {loss_value:.4f}")
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
        acc = float(sess.run(accuracy, {x_eval: x_te, y_eval: y_te}))
    say(f"test accuracy {acc:.4f}  ({time.time() - t0:.1f} s)")
    return float(loss_value), acc


if __name__ == "__main__":
    main()
