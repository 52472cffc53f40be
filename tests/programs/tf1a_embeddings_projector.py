"""Learning word embeddings in the style of TensorFlow 1's word2vec basic example, on a
small generated corpus: ``tf.nn.embedding_lookup`` gives sparse (``IndexedSlices``)
gradients that MomentumOptimizer applies to the looked-up rows only; the embedding is
checkpointed and described for TensorBoard's projector
(``tf.contrib.tensorboard.plugins.projector``) with a metadata file of the words."""

import os
import tempfile

import numpy as np
import mylib as tf
from mylib.contrib.tensorboard.plugins import projector

# Two topics: words of a topic appear together, so their embeddings should cluster.
TOPICS = [["cat", "dog", "horse", "cow", "sheep", "goat"],
          ["red", "green", "blue", "yellow", "purple", "orange"]]
VOCAB = [w for t in TOPICS for w in t]


def make_pairs(rng, n):
    """(center, context, label): label 1 for words of one topic, 0 across topics."""
    centers = rng.randint(0, len(VOCAB), n)
    same = rng.rand(n) < 0.5
    contexts = np.where(same, (centers // 6) * 6 + rng.randint(0, 6, n),
                        (1 - centers // 6) * 6 + rng.randint(0, 6, n))
    return centers.astype(np.int32), contexts.astype(np.int32), same.astype(np.float32)


def main(logdir=None):
    logdir = logdir or tempfile.mkdtemp()
    rng = np.random.RandomState(0)
    with tf.Graph().as_default():
        center = tf.placeholder(tf.int32, [None])
        context = tf.placeholder(tf.int32, [None])
        label = tf.placeholder(tf.float32, [None])
        embeddings = tf.Variable(tf.random_uniform([len(VOCAB), 8], -1.0, 1.0, seed=3),
                                 name="embeddings")
        emb_c = tf.nn.embedding_lookup(embeddings, center)
        emb_o = tf.nn.embedding_lookup(embeddings, context)
        score = tf.reduce_sum(emb_c * emb_o, 1)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=label,
                                                                      logits=score))
        opt = tf.train.MomentumOptimizer(0.1, 0.9)
        grads_and_vars = opt.compute_gradients(loss, [embeddings])
        sparse = isinstance(grads_and_vars[0][0], tf.IndexedSlices)
        train_op = opt.apply_gradients(grads_and_vars)
        saver = tf.train.Saver([embeddings])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            c, o, lab = make_pairs(rng, 512)
            first = sess.run(loss, {center: c, context: o, label: lab})
            for _ in range(150):
                c, o, lab = make_pairs(rng, 64)
                sess.run(train_op, {center: c, context: o, label: lab})
            c, o, lab = make_pairs(rng, 512)
            last = sess.run(loss, {center: c, context: o, label: lab})
            final = sess.run(embeddings)
            saver.save(sess, os.path.join(logdir, "model.ckpt"), 150)
        with open(os.path.join(logdir, "metadata.tsv"), "w") as f:
            f.write("\n".join(VOCAB) + "\n")
        writer = tf.summary.FileWriter(logdir)
        config = projector.ProjectorConfig()
        embedding = config.embeddings.add()
        embedding.tensor_name = embeddings.name
        embedding.metadata_path = "metadata.tsv"
        projector.visualize_embeddings(writer, config)
        writer.close()
    unit = final / np.linalg.norm(final, axis=1, keepdims=True)
    cos = unit @ unit.T
    within = np.mean([cos[i, j] for t in range(2) for i in range(t * 6, t * 6 + 6)
                      for j in range(t * 6, t * 6 + 6) if i != j])
    across = np.mean(cos[:6, 6:])
    print(f"loss {first:.3f} -> {last:.3f}; cosine within topics {within:.2f}, "
          f"across {across:.2f}; sparse gradients: {sparse}")
    return {"first_loss": first, "last_loss": last, "within": within, "across": across,
            "sparse": sparse, "logdir": logdir, "embeddings": final}


if __name__ == "__main__":
    main()
