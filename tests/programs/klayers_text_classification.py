"""Text classification from scratch, in the keras-io style: raw sentences are turned
into token ids by an adapted `TextVectorization` applied in the input pipeline
(``dataset.map``, as Keras 3 on JAX requires), then an `Embedding`, average pooling and
a dense classifier learn the sentiment. The sentences are generated from small word
lists, so the label is recoverable from the words and a learning model beats chance."""

import numpy as np

import mylib as ml
from mylib import layers as L

POS = ["great", "wonderful", "loved", "superb", "moving", "brilliant", "fun"]
NEG = ["awful", "boring", "hated", "dull", "terrible", "weak", "messy"]
FILL = ["the", "movie", "film", "plot", "was", "acting", "a", "and", "really", "story",
        "I", "it", "ending", "quite"]


def make_sentences(n, seed):
    rs = np.random.RandomState(seed)
    texts, labels = [], []
    for _ in range(n):
        label = rs.randint(2)
        words = list(rs.choice(FILL, rs.randint(4, 9)))
        own, other = (POS, NEG) if label else (NEG, POS)
        words += list(rs.choice(own, 2)) + list(rs.choice(other, rs.randint(0, 2)))
        rs.shuffle(words)
        text = " ".join(words).capitalize() + rs.choice([".", "!", "..."])
        texts.append(text)
        labels.append(label)
    return np.array(texts, dtype=object), np.array(labels, np.float32)


def main(epochs=5):
    x_tr, y_tr = make_sentences(960, 0)
    x_va, y_va = make_sentences(320, 1)
    vectorize = L.TextVectorization(max_tokens=200, output_sequence_length=16)
    vectorize.adapt(ml.data.Dataset.from_tensor_slices(x_tr).batch(128))

    def to_ids(text, label):
        return vectorize(text), label

    train_ds = (ml.data.Dataset.from_tensor_slices((x_tr, y_tr)).shuffle(960, seed=0)
                .batch(32).map(to_ids).prefetch(2))
    val_ds = ml.data.Dataset.from_tensor_slices((x_va, y_va)).batch(64).map(to_ids)

    model = ml.Sequential([
        L.Input((16,), dtype="int64"),
        L.Embedding(vectorize.vocabulary_size(), 16, mask_zero=True),
        L.GlobalAveragePooling1D(),
        L.Dense(16, activation="relu"),
        L.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=ml.optimizers.Adam(0.01), loss="binary_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(train_ds, validation_data=val_ds, epochs=epochs, verbose=0)
    return history.history


if __name__ == "__main__":
    h = main()
    print({k: round(v[-1], 3) for k, v in h.items()})
    assert h["loss"][-1] < h["loss"][0]
    assert h["val_accuracy"][-1] > 0.9, h["val_accuracy"]
