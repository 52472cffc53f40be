"""Structured-data classification from scratch, in the keras-io style: a table of
numeric, integer-coded and string-coded features; the numeric ones standardized by an
adapted `Normalization`, the integer codes one-hot encoded by an adapted `IntegerLookup`
inside the model, the string column by a `StringLookup` in the input pipeline. The
labels follow a rule of the features, so a model that learns beats chance clearly."""

import numpy as np

import mylib as ml
from mylib import layers as L


def make_table(n, seed):
    rs = np.random.RandomState(seed)
    age = rs.uniform(30, 75, n)
    chol = rs.normal(240, 45, n)
    cp = rs.choice([0, 1, 2, 3], n)  # chest-pain type, an integer code
    thal = rs.choice(["normal", "fixed", "reversible"], n)
    score = (age - 52) / 10 + (chol - 240) / 45 + (cp == 3) * 1.5 - (thal == "normal") * 1.5
    target = (score + rs.normal(0, 0.3, n) > 0).astype(np.float32)
    numeric = np.stack([age, chol], 1).astype(np.float32)
    return numeric, cp[:, None].astype(np.int64), thal[:, None].astype(object), target


def main(epochs=8):
    num_tr, cp_tr, thal_tr, y_tr = make_table(800, 0)
    num_va, cp_va, thal_va, y_va = make_table(320, 1)

    thal_lookup = L.StringLookup(output_mode="one_hot")
    thal_lookup.adapt(thal_tr)

    def encode(features, y):  # host work, in the input pipeline
        num, cp, thal = features
        return (num, cp, thal_lookup(thal)), y

    train_ds = (ml.data.Dataset.from_tensor_slices(((num_tr, cp_tr, thal_tr), y_tr))
                .shuffle(800, seed=0).batch(32).map(encode))
    val_ds = ml.data.Dataset.from_tensor_slices(((num_va, cp_va, thal_va), y_va)).batch(
        64).map(encode)

    norm = L.Normalization()
    norm.adapt(num_tr)
    cp_lookup = L.IntegerLookup(output_mode="one_hot")
    cp_lookup.adapt(cp_tr)

    num_in = L.Input((2,), name="numeric")
    cp_in = L.Input((1,), dtype="int64", name="cp")
    thal_in = L.Input((thal_lookup.vocabulary_size(),), name="thal")
    x = L.Concatenate()([norm(num_in), cp_lookup(cp_in), thal_in])
    x = L.Dropout(0.1)(L.Dense(16, activation="relu")(x))
    out = L.Dense(1, activation="sigmoid")(x)
    model = ml.Model([num_in, cp_in, thal_in], out)
    model.compile(optimizer=ml.optimizers.Adam(0.01), loss="binary_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(train_ds, validation_data=val_ds, epochs=epochs, verbose=0)
    return history.history


if __name__ == "__main__":
    h = main()
    print({k: round(v[-1], 3) for k, v in h.items()})
    assert h["loss"][-1] < h["loss"][0]
    assert h["val_accuracy"][-1] > 0.85, h["val_accuracy"]
