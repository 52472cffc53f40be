"""The graph API by hand: placeholders, variables, `gradients`, and a training loop of
`Session.run` calls — softmax regression on scikit-learn's handwritten digits.

    python examples/graph_basics.py [--steps 300] [--lr 0.5]
"""

import argparse

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import mylib as ml


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300, help="gradient steps (full batch)")
    p.add_argument("--lr", type=float, default=0.5, help="learning rate")
    args = p.parse_args(argv)

    x_all, y_all = load_digits(return_X_y=True)
    x_all = (x_all / 16.0).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x_all, y_all, test_size=0.2,
                                              stratify=y_all, random_state=0)

    g = ml.Graph()
    with g.as_default():
        x = ml.placeholder(ml.float32, [None, 64], name="x")       # [batch, 64] pixels
        labels = ml.placeholder(ml.int64, [None], name="labels")    # [batch] class ids
        w = ml.Variable(np.zeros((64, 10), np.float32), name="w")
        b = ml.Variable(np.zeros((10,), np.float32), name="b")
        logits = ml.matmul(x, w) + b                                  # [batch, 10]
        loss = ml.reduce_mean(
            ml.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grad_w, grad_b = ml.gradients(loss, [w, b])                   # graph ops too
        train = ml.group(w.assign_sub(args.lr * grad_w), b.assign_sub(args.lr * grad_b))
        correct = ml.equal(ml.argmax(logits, axis=1), labels)
        accuracy = ml.reduce_mean(ml.cast(correct, ml.float32))

        with ml.Session(graph=g) as sess:
            sess.run(ml.global_variables_initializer())
            step = sess.make_callable([train, loss], feed_list=[x, labels])
            for i in range(args.steps):
                _, loss_value = step(x_tr, y_tr)
                if i % 50 == 0 or i == args.steps - 1:
                    print(f"step {i:4d}  loss {loss_value:.4f}")
            acc = sess.run(accuracy, {x: x_te, labels: y_te})
            print(f"test accuracy {acc:.4f}")
    return float(acc)


if __name__ == "__main__":
    main()
