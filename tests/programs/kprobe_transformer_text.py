"""A Keras 3 user program in the style of keras-io's 'Text classification with Transformer'
(generated token sequences).

Only the import line (`from mylib import keras`) and the data differ from a Keras 3
program. Run: python tests/programs/kprobe_transformer_text.py
"""

import numpy as np
from mylib import keras
from mylib.keras import layers, ops

class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs, training=False):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output, training=training)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output, training=training)
        return self.layernorm2(out1 + ffn_output)

class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        maxlen = ops.shape(x)[-1]
        positions = ops.arange(start=0, stop=maxlen, step=1)
        positions = self.pos_emb(positions)
        x = self.token_emb(x)
        return x + positions

def make_data(n, maxlen, vocab, rng):
    x = rng.integers(3, vocab, size=(n, maxlen))
    y = rng.integers(0, 2, size=(n,))
    # label 1 sequences contain token 1 a few times, label 0 contain token 2
    for i in range(n):
        pos = rng.choice(maxlen, 3, replace=False)
        x[i, pos] = 1 if y[i] else 2
    return x, y

def main(epochs=4):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    vocab_size, maxlen = 200, 20
    x_train, y_train = make_data(800, maxlen, vocab_size, rng)
    x_val, y_val = make_data(200, maxlen, vocab_size, rng)
    x_train = keras.utils.pad_sequences(list(x_train), maxlen=maxlen)
    embed_dim, num_heads, ff_dim = 16, 2, 16
    inputs = layers.Input(shape=(maxlen,))
    embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
    x = embedding_layer(inputs)
    transformer_block = TransformerBlock(embed_dim, num_heads, ff_dim)
    x = transformer_block(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=32, epochs=epochs, validation_data=(x_val, y_val))
    print(history.history)
    assert history.history["val_accuracy"][-1] > 0.85
    return history

if __name__ == "__main__":
    main()
