"""A Keras 3 user program in the style of keras-io's "Character-level recurrent
sequence-to-sequence model": an LSTM encoder whose `return_state` states start an LSTM
decoder (`initial_state=`), trained with teacher forcing; the model is saved and
loaded, and the inference encoder and one-step decoder are rebuilt from the loaded
model's layers (`model.input`, `model.layers[2].output`, the decoder layers called
again on new Inputs), then used for greedy decoding.

Only the imports and the data differ from a Keras 3 program: the English-French pairs
are replaced by generated words over "abcdefgh" and their reversals (with the start
"\\t" and end "\\n" characters), and the sizes are smaller. It asserts the loss falls
and that the rebuilt one-step decoder, fed the teacher-forced characters, reproduces
the trained model's outputs step by step.
Run: python tests/programs/k4p_lstm_seq2seq.py
"""

import os
import tempfile

import numpy as np

from mylib import keras

latent_dim = 32


def make_pairs(n, rng):
    input_texts, target_texts = [], []
    for _ in range(n):
        word = "".join(rng.choice(list("abcdefgh"), rng.integers(2, 6)))
        input_texts.append(word)
        target_texts.append("\t" + word[::-1] + "\n")
    return input_texts, target_texts


def main(epochs=20):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    input_texts, target_texts = make_pairs(400, rng)
    input_characters = sorted(set("".join(input_texts)))
    target_characters = sorted(set("".join(target_texts)))
    num_encoder_tokens = len(input_characters)
    num_decoder_tokens = len(target_characters)
    max_encoder_seq_length = max([len(txt) for txt in input_texts])
    max_decoder_seq_length = max([len(txt) for txt in target_texts])
    input_token_index = dict([(char, i) for i, char in enumerate(input_characters)])
    target_token_index = dict([(char, i) for i, char in enumerate(target_characters)])

    encoder_input_data = np.zeros(
        (len(input_texts), max_encoder_seq_length, num_encoder_tokens), dtype="float32")
    decoder_input_data = np.zeros(
        (len(input_texts), max_decoder_seq_length, num_decoder_tokens), dtype="float32")
    decoder_target_data = np.zeros(
        (len(input_texts), max_decoder_seq_length, num_decoder_tokens), dtype="float32")
    for i, (input_text, target_text) in enumerate(zip(input_texts, target_texts)):
        for t, char in enumerate(input_text):
            encoder_input_data[i, t, input_token_index[char]] = 1.0
        for t, char in enumerate(target_text):
            decoder_input_data[i, t, target_token_index[char]] = 1.0
            if t > 0:
                decoder_target_data[i, t - 1, target_token_index[char]] = 1.0

    encoder_inputs = keras.Input(shape=(None, num_encoder_tokens))
    encoder = keras.layers.LSTM(latent_dim, return_state=True)
    encoder_outputs, state_h, state_c = encoder(encoder_inputs)
    encoder_states = [state_h, state_c]
    decoder_inputs = keras.Input(shape=(None, num_decoder_tokens))
    decoder_lstm = keras.layers.LSTM(latent_dim, return_sequences=True, return_state=True)
    decoder_outputs, _, _ = decoder_lstm(decoder_inputs, initial_state=encoder_states)
    decoder_dense = keras.layers.Dense(num_decoder_tokens, activation="softmax")
    decoder_outputs = decoder_dense(decoder_outputs)
    model = keras.Model([encoder_inputs, decoder_inputs], decoder_outputs)
    model.compile(optimizer="rmsprop", loss="categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit([encoder_input_data, decoder_input_data], decoder_target_data,
                        batch_size=32, epochs=epochs, validation_split=0.2, verbose=2)
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0], history.history

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s2s_model.keras")
        model.save(path)
        model = keras.models.load_model(path)

    encoder_inputs = model.input[0]
    encoder_outputs, state_h_enc, state_c_enc = model.layers[2].output
    encoder_states = [state_h_enc, state_c_enc]
    encoder_model = keras.Model(encoder_inputs, encoder_states)
    decoder_inputs = model.input[1]
    decoder_state_input_h = keras.Input(shape=(latent_dim,))
    decoder_state_input_c = keras.Input(shape=(latent_dim,))
    decoder_states_inputs = [decoder_state_input_h, decoder_state_input_c]
    decoder_lstm = model.layers[3]
    decoder_outputs, state_h_dec, state_c_dec = decoder_lstm(
        decoder_inputs, initial_state=decoder_states_inputs)
    decoder_states = [state_h_dec, state_c_dec]
    decoder_dense = model.layers[4]
    decoder_outputs = decoder_dense(decoder_outputs)
    decoder_model = keras.Model([decoder_inputs] + decoder_states_inputs,
                                [decoder_outputs] + decoder_states)

    # The one-step decoder, fed the teacher-forced characters, is the trained model.
    seqs = slice(0, 8)
    full = model.predict([encoder_input_data[seqs], decoder_input_data[seqs]], verbose=0)
    states = encoder_model.predict(encoder_input_data[seqs], verbose=0)
    for t in range(max_decoder_seq_length):
        out, h, c = decoder_model.predict([decoder_input_data[seqs, t:t + 1]] + states,
                                          verbose=0)
        np.testing.assert_allclose(out[:, 0], full[:, t], rtol=1e-4, atol=1e-5)
        states = [h, c]

    reverse_target_char_index = dict((i, char) for char, i in target_token_index.items())

    def decode_sequence(input_seq):
        states_value = encoder_model.predict(input_seq, verbose=0)
        target_seq = np.zeros((1, 1, num_decoder_tokens))
        target_seq[0, 0, target_token_index["\t"]] = 1.0
        decoded_sentence = ""
        while True:
            output_tokens, h, c = decoder_model.predict([target_seq] + states_value,
                                                        verbose=0)
            sampled_token_index = np.argmax(output_tokens[0, -1, :])
            sampled_char = reverse_target_char_index[sampled_token_index]
            decoded_sentence += sampled_char
            if sampled_char == "\n" or len(decoded_sentence) > max_decoder_seq_length:
                break
            target_seq = np.zeros((1, 1, num_decoder_tokens))
            target_seq[0, 0, sampled_token_index] = 1.0
            states_value = [h, c]
        return decoded_sentence

    for seq_index in range(3):
        decoded = decode_sequence(encoder_input_data[seq_index: seq_index + 1])
        print("Input:", input_texts[seq_index], "Decoded:", repr(decoded))
        assert set(decoded) <= set(target_characters)
    return history


if __name__ == "__main__":
    main()
