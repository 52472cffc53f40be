"""A Keras 3 user program in the style of keras-io's functional API guide ("models
with multiple inputs and outputs"): a ticket ranker with title, body and tag inputs,
a priority score and a department classifier, trained with per-output losses and
loss weights, then a residual block written with ops on symbolic tensors
(``x += residual``, as keras/examples/demo_functional.py).

Only the import line (`from mylib import keras`) and the data differ from a Keras 3
program: tickets are generated so that the tags decide the department and words of
the title decide the priority. Run: python tests/programs/k3p_functional_multi_io.py
"""

import numpy as np
from mylib import keras
from mylib.keras import layers, ops

num_tags = 12
num_words = 200
num_departments = 4


def make_data(n, rng):
    title = rng.integers(1, num_words, size=(n, 10))
    body = rng.integers(1, num_words, size=(n, 30))
    tags = rng.integers(0, 2, size=(n, num_tags)).astype("float32")
    urgent = (title < 20).sum(1) > 0  # "urgent" words in the title
    priority = urgent.astype("float32")[:, None]
    dept = tags[:, :num_departments].argmax(1) * (tags[:, :num_departments].sum(1) > 0)
    departments = keras.utils.to_categorical(dept, num_departments)
    return title, body, tags, priority, departments


def main(epochs=12):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    title_input = keras.Input(shape=(None,), name="title")
    body_input = keras.Input(shape=(None,), name="body")
    tags_input = keras.Input(shape=(num_tags,), name="tags")
    title_features = layers.Embedding(num_words, 16)(title_input)
    body_features = layers.Embedding(num_words, 16)(body_input)
    title_features = layers.GlobalMaxPooling1D()(title_features)
    body_features = layers.LSTM(8)(body_features)
    x = layers.concatenate([title_features, body_features, tags_input])
    residual = layers.Dense(32, activation="relu")(x)
    x = layers.Dense(32, activation="relu")(residual)
    x += residual
    x = x * 0.5
    priority_pred = layers.Dense(1, name="priority")(x)
    department_pred = layers.Dense(num_departments, name="department")(x)
    model = keras.Model(inputs=[title_input, body_input, tags_input],
                        outputs={"priority": priority_pred, "department": department_pred})
    model.summary()
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss={"priority": keras.losses.BinaryCrossentropy(from_logits=True),
              "department": keras.losses.CategoricalCrossentropy(from_logits=True)},
        loss_weights={"priority": 1.0, "department": 0.5},
        metrics={"priority": [keras.metrics.BinaryAccuracy(threshold=0.0)],
                 "department": ["categorical_accuracy"]},
    )
    title, body, tags, priority, departments = make_data(1024, rng)
    history = model.fit({"title": title, "body": body, "tags": tags},
                        {"priority": priority, "department": departments},
                        epochs=epochs, batch_size=32, validation_split=0.2, verbose=2)
    print({k: round(v[-1], 4) for k, v in history.history.items()})
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    t2, b2, g2, p2, d2 = make_data(256, rng)
    scores = model.evaluate({"title": t2, "body": b2, "tags": g2},
                            {"priority": p2, "department": d2}, return_dict=True, verbose=0)
    print(scores)
    assert scores["department_categorical_accuracy"] > 0.9, scores
    assert scores["priority_binary_accuracy"] > 0.85, scores
    preds = model.predict({"title": t2[:4], "body": b2[:4], "tags": g2[:4]}, verbose=0)
    assert preds["priority"].shape == (4, 1) and preds["department"].shape == (4, 4)
    return history


if __name__ == "__main__":
    main()
