"""Writes the example notebooks in examples/ from the cell sources below (run after
editing them: `python tools/make_notebooks.py`). The notebooks are checked by the test
command through nbval (`pytest --nbval-lax`)."""

import pathlib

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = pathlib.Path(__file__).resolve().parents[1] / "examples"

DIGITS_CNN = [
    ("md", """# A CNN on scikit-learn's digits

A small convolutional network — `Conv2D`, `BatchNormalization`, `MaxPooling2D`,
`Dropout` — trained with `fit` on the 8x8 handwritten digits that ship with
scikit-learn, with TensorBoard logs and a plot of the learning curves."""),
    ("code", """import tempfile
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
import mylib as ml

x, y = load_digits(return_X_y=True)
x = (x / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)   # [batch, height, width, channels]
x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, stratify=y,
                                                    random_state=0)
x_train.shape, x_test.shape"""),
    ("code", """model = ml.Sequential([
    ml.layers.Input((8, 8, 1)),
    ml.layers.Conv2D(16, 3, padding="same", activation="relu"),
    ml.layers.BatchNormalization(momentum=0.9),
    ml.layers.MaxPooling2D(2),
    ml.layers.Conv2D(32, 3, padding="same", activation="relu"),
    ml.layers.BatchNormalization(momentum=0.9),
    ml.layers.Flatten(),
    ml.layers.Dropout(0.3),
    ml.layers.Dense(10, activation="softmax"),
])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.summary()"""),
    ("code", """logdir = tempfile.mkdtemp(prefix="digits_cnn_")
history = model.fit(x_train, y_train, batch_size=32, epochs=10, validation_split=0.1,
                    callbacks=[ml.callbacks.TensorBoard(logdir)], verbose=2)
loss, acc = model.evaluate(x_test, y_test, verbose=0)
print(f"test accuracy {acc:.4f}; logs in {logdir}")
assert acc > 0.9"""),
    ("code", """fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3))
ax1.plot(history.history["loss"], label="train"); ax1.plot(history.history["val_loss"], label="validation")
ax1.set_title("loss"); ax1.legend()
ax2.plot(history.history["accuracy"], label="train"); ax2.plot(history.history["val_accuracy"], label="validation")
ax2.set_title("accuracy"); ax2.legend()
fig.tight_layout()"""),
]

TEXT_LSTM = [
    ("md", """# A character-level LSTM language model

Trained on English text that every Python installation ships: the documentation
topics in `pydoc_data.topics` (about 460 KB). `Embedding` -> `LSTM` (its time loop is a
`scan` in the graph) -> `Dense` softmax over characters; then we sample from it. Kept
short to run on a CPU: a slice of the text and a few epochs."""),
    ("code", """import numpy as np
import pydoc_data.topics
import mylib as ml

text = "".join(pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics))
print(f"{len(text):,} characters in total")
text = text[:60_000]
chars = sorted(set(text))
index = {c: i for i, c in enumerate(chars)}
seq_len, step = 32, 3
starts = np.arange(0, len(text) - seq_len - 1, step)
ids = np.array([index[c] for c in text], dtype=np.int32)
x = np.stack([ids[s:s + seq_len] for s in starts])           # [samples, seq_len]
y = ids[starts + seq_len].astype(np.int64)                     # [samples] next character
len(chars), x.shape"""),
    ("code", """model = ml.Sequential([
    ml.layers.Input((seq_len,), dtype="int32"),
    ml.layers.Embedding(len(chars), 32),
    ml.layers.LSTM(128),
    ml.layers.Dense(len(chars), activation="softmax"),
])
model.compile(optimizer=ml.optimizers.Adam(3e-3), loss="sparse_categorical_crossentropy")
history = model.fit(x, y, batch_size=128, epochs=3, verbose=2)
assert history.history["loss"][-1] < history.history["loss"][0]"""),
    ("code", """def sample(seed, n=200, temperature=0.5, rng=np.random.default_rng(0)):
    out = seed
    for _ in range(n):
        window = np.array([[index[c] for c in out[-seq_len:]]], dtype=np.int32)
        p = model.predict(window, verbose=0)[0].astype(np.float64)
        logits = np.log(np.maximum(p, 1e-12)) / temperature
        p = np.exp(logits - logits.max()); p /= p.sum()
        out += chars[rng.choice(len(chars), p=p)]
    return out

print(sample(text[1000:1000 + seq_len]))"""),
]

GRAPH_API = [
    ("md", """# A tour of the graph API

Placeholders, variables, `gradients`, functional control flow, device placement, and
the dataflow graph in TensorBoard."""),
    ("code", """import tempfile
import numpy as np
import mylib as ml

g = ml.Graph()
with g.as_default():
    x = ml.placeholder(ml.float32, [None, 3], name="x")          # [batch, 3]
    w = ml.Variable(np.ones((3, 1), np.float32), name="w")
    y = ml.matmul(x, w)                                          # [batch, 1]
    loss = ml.reduce_mean(ml.square(y - 2.0))
    grad_w, = ml.gradients(loss, [w])                            # more graph ops
    train = w.assign_sub(0.02 * grad_w)
print(y, loss.op.type, grad_w.op.name)"""),
    ("code", """batch = np.arange(6, dtype=np.float32).reshape(2, 3)
with ml.Session(graph=g) as sess:
    sess.run(ml.global_variables_initializer())
    before = sess.run(loss, {x: batch})
    for _ in range(20):
        sess.run(train, {x: batch})
    after = sess.run(loss, {x: batch})
print(before, after)
assert after < before"""),
    ("md", """Control flow is functional: `cond`, `while_loop` and `scan` hold sub-graphs and
compile to `lax.cond`, `lax.while_loop` and `lax.scan`; gradients flow through them."""),
    ("code", """g2 = ml.Graph()
with g2.as_default():
    a = ml.placeholder(ml.float32, [], name="a")
    b = ml.cond(a > 0, lambda: a * 3.0, lambda: -a)
    i, p = ml.while_loop(lambda i, p: i < 5, lambda i, p: (i + 1, p * a),
                         [ml.constant(0), ml.constant(1.0)], maximum_iterations=5)
    dp_da, = ml.gradients(p, [a])                                 # 5 * a ** 4
    with ml.Session(graph=g2) as sess:
        print(sess.run([b, p, dp_da], {a: 2.0}))"""),
    ("md", """Devices: ops are placed with `ml.device`; a variable's reads and updates sit with
it. `log_device_placement` prints where each op ran."""),
    ("code", """print([d.name for d in ml.devices.list_devices()])
g3 = ml.Graph()
with g3.as_default():
    v = ml.placeholder(ml.float32, [2], name="v")
    with ml.device("/device:CPU:0"):
        e = ml.exp(v, name="exp_on_cpu0")
    config = ml.ConfigProto(log_device_placement=True)
    with ml.Session(graph=g3, config=config) as sess:
        print(sess.run(e, {v: [0.0, 1.0]}))
print(e.op.device)"""),
    ("md", """The graph in TensorBoard: the Graphs tab shows op names, types, inputs and
devices (`tensorboard --logdir <the printed directory>`)."""),
    ("code", """from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

logdir = tempfile.mkdtemp(prefix="graph_api_")
writer = ml.summary.FileWriter(logdir, graph=g)
writer.close()
acc = EventAccumulator(logdir); acc.Reload()
print(logdir, len(acc.Graph().node), "nodes")"""),
]


def write(name, cells):
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [new_markdown_cell(src) if kind == "md" else new_code_cell(src)
                for kind, src in cells]
    nbformat.write(nb, ROOT / name)


if __name__ == "__main__":
    write("digits_cnn.ipynb", DIGITS_CNN)
    write("text_lstm.ipynb", TEXT_LSTM)
    write("graph_api.ipynb", GRAPH_API)
