"""A Keras 3 user program in the style of keras-io's 'Structured data classification' (dict
inputs, Normalization.adapt, CategoryEncoding, IntegerLookup, layers.concatenate).

Only the import line (`from mylib import keras`) and the data differ from a Keras 3
program. Run: python tests/programs/kprobe_structured_data.py
"""

import numpy as np
from mylib import keras
from mylib.keras import layers

def main(epochs=10):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    n = 1000
    age = rng.uniform(20, 80, n)
    chol = rng.normal(220, 40, n)
    thal = rng.integers(0, 3, n)
    sex = rng.integers(0, 2, n)
    logit = 0.08 * (age - 50) + 0.03 * (chol - 220) + 1.5 * (thal == 2) - 0.5 * sex
    target = (logit + rng.normal(0, 0.5, n) > 0).astype("int64")
    data = {"age": age, "chol": chol, "thal": thal, "sex": sex}
    tr = slice(0, 800); va = slice(800, n)
    def encode_numerical_feature(feature, name, values):
        normalizer = layers.Normalization()
        normalizer.adapt(values[:, None])
        return normalizer(feature)
    age_in = keras.Input(shape=(1,), name="age")
    chol_in = keras.Input(shape=(1,), name="chol")
    thal_in = keras.Input(shape=(1,), name="thal", dtype="int64")
    sex_in = keras.Input(shape=(1,), name="sex", dtype="int64")
    all_inputs = [age_in, chol_in, thal_in, sex_in]
    thal_enc = layers.CategoryEncoding(num_tokens=3, output_mode="one_hot")(thal_in)
    sex_enc = layers.IntegerLookup(output_mode="one_hot")
    sex_enc.adapt(sex[tr])
    sex_enc = sex_enc(sex_in)
    all_features = layers.concatenate([
        encode_numerical_feature(age_in, "age", age[tr]),
        encode_numerical_feature(chol_in, "chol", chol[tr]),
        thal_enc, sex_enc])
    x = layers.Dense(32, activation="relu")(all_features)
    x = layers.Dropout(0.5)(x)
    output = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(all_inputs, output)
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    train = {k: v[tr][:, None] for k, v in data.items()}
    val = {k: v[va][:, None] for k, v in data.items()}
    h = model.fit(train, target[tr], epochs=epochs, validation_data=(val, target[va]), batch_size=32)
    print(h.history)
    sample = {"age": 60, "chol": 300, "thal": 2, "sex": 1}
    input_dict = {name: np.array([[value]]) for name, value in sample.items()}
    predictions = model.predict(input_dict)
    print("prob", predictions[0][0])
    assert h.history["val_accuracy"][-1] > 0.85
    assert predictions[0][0] > 0.5
    return h

if __name__ == "__main__":
    main()
