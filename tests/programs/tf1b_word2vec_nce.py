"""Skip-gram word2vec in the style of TensorFlow 1's `word2vec_basic.py`, on a
generated corpus whose 60 words fall in 6 topics (each sentence draws its words from
one topic): embeddings from tf.get_variable in a partitioned variable scope (as large
tables are), tf.nn.embedding_lookup, tf.nn.nce_loss with sampled noise words, and
cosine similarities of normalized embeddings. Learning shows as nearest neighbours
that share the word's topic."""

import numpy as np
import mylib as tf

VOCAB, TOPICS, EMBED, NUM_SAMPLED, WINDOW = 60, 6, 16, 8, 2


def make_pairs(rng, sentences=600, length=8):
    per_topic = VOCAB // TOPICS
    centers, contexts = [], []
    for _ in range(sentences):
        topic = rng.randint(TOPICS)
        words = topic * per_topic + rng.randint(per_topic, size=length)
        for i, w in enumerate(words):
            for j in range(max(0, i - WINDOW), min(length, i + WINDOW + 1)):
                if j != i:
                    centers.append(w)
                    contexts.append(words[j])
    return np.array(centers, np.int32), np.array(contexts, np.int32)[:, None]


def main():
    rng = np.random.RandomState(0)
    centers, contexts = make_pairs(rng)

    tf.reset_default_graph()
    tf.set_random_seed(0)
    train_inputs = tf.placeholder(tf.int32, shape=[None])
    train_labels = tf.placeholder(tf.int32, shape=[None, 1])
    with tf.variable_scope("word2vec", partitioner=tf.fixed_size_partitioner(2)):
        embeddings = tf.get_variable(
            "embeddings", [VOCAB, EMBED],
            initializer=tf.random_uniform_initializer(-1.0, 1.0))
        nce_weights = tf.get_variable(
            "nce_weights", [VOCAB, EMBED],
            initializer=tf.truncated_normal_initializer(stddev=1.0 / np.sqrt(EMBED)))
    nce_biases = tf.Variable(tf.zeros([VOCAB]), name="nce_biases")
    embed = tf.nn.embedding_lookup(embeddings, train_inputs)
    loss = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases,
                                         labels=train_labels, inputs=embed,
                                         num_sampled=NUM_SAMPLED, num_classes=VOCAB))
    optimizer = tf.train.AdamOptimizer(learning_rate=0.05).minimize(loss)

    norm = tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keepdims=True))
    normalized = embeddings / norm
    similarity = tf.matmul(normalized, normalized, transpose_b=True)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = []
        for step in range(300):
            idx = rng.choice(len(centers), 128, replace=False)
            _, l = sess.run([optimizer, loss], {train_inputs: centers[idx],
                                                train_labels: contexts[idx]})
            losses.append(l)
        sim = np.array(sess.run(similarity))
    per_topic = VOCAB // TOPICS
    np.fill_diagonal(sim, -np.inf)
    nearest = sim.argmax(1)
    same_topic = float(np.mean(nearest // per_topic == np.arange(VOCAB) // per_topic))
    first, last = float(np.mean(losses[:20])), float(np.mean(losses[-20:]))
    print(f"nce loss {first:.3f} -> {last:.3f}, nearest neighbour in topic {same_topic:.2f}")
    return {"first_loss": first, "last_loss": last, "same_topic": same_topic,
            "parts": len(list(embeddings))}


if __name__ == "__main__":
    main()
