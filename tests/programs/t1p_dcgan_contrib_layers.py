"""A deep convolutional GAN in the style of TensorFlow-Examples' `dcgan.py` (TF1), on
scikit-learn's 8x8 digits: a generator of tf.contrib.layers.fully_connected /
batch_norm / conv2d_transpose, a discriminator of tf.contrib.layers.conv2d / flatten
shared by variable-scope reuse, two classes (real / fake) with sparse softmax
cross-entropy whose labels are fed as numpy float arrays (np.ones, as the original
does), and two Adam optimizers each restricted by `var_list` to its own scope."""

import numpy as np
import mylib as tf
from sklearn.datasets import load_digits

NOISE_DIM, BATCH = 16, 64
layers = tf.contrib.layers


def generator(z, is_training, reuse=False):
    with tf.variable_scope("Generator", reuse=reuse):
        h = layers.fully_connected(z, 2 * 2 * 32, activation_fn=None)
        h = tf.reshape(h, [-1, 2, 2, 32])
        h = layers.batch_norm(h, is_training=is_training, activation_fn=tf.nn.relu)
        h = layers.conv2d_transpose(h, 16, 3, stride=2, normalizer_fn=layers.batch_norm,
                                    normalizer_params={"is_training": is_training})
        return layers.conv2d_transpose(h, 1, 3, stride=2, activation_fn=tf.nn.sigmoid)


def discriminator(x, reuse=False):
    with tf.variable_scope("Discriminator", reuse=reuse):
        h = layers.conv2d(x, 16, 3, stride=2, activation_fn=tf.nn.leaky_relu)
        h = layers.conv2d(h, 32, 3, stride=2, activation_fn=tf.nn.leaky_relu)
        h = layers.flatten(h)
        return layers.fully_connected(h, 2, activation_fn=None)


def main(steps=300):
    images = (load_digits().images / 16.0).astype(np.float32)[..., None]
    rng = np.random.RandomState(0)

    tf.reset_default_graph()
    tf.set_random_seed(0)
    noise = tf.placeholder(tf.float32, [None, NOISE_DIM])
    real = tf.placeholder(tf.float32, [None, 8, 8, 1])
    is_training = tf.placeholder_with_default(True, [])
    fake = generator(noise, is_training)
    disc_real = discriminator(real)
    disc_fake = discriminator(fake, reuse=True)
    disc_target = tf.placeholder(tf.int32, [None])
    gen_target = tf.placeholder(tf.int32, [None])
    disc_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        logits=tf.concat([disc_real, disc_fake], axis=0), labels=disc_target))
    gen_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        logits=disc_fake, labels=gen_target))
    gen_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="Generator")
    disc_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="Discriminator")
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_gen = tf.train.AdamOptimizer(0.002, beta1=0.5).minimize(gen_loss,
                                                                     var_list=gen_vars)
    train_disc = tf.train.AdamOptimizer(0.002, beta1=0.5).minimize(disc_loss,
                                                                  var_list=disc_vars)
    moving_mean = [v for v in tf.global_variables() if "moving_mean" in v.name][0]

    def mean_image_corr(sess):
        z = rng.uniform(-1, 1, [256, NOISE_DIM])
        g = sess.run(fake, {noise: z, is_training: False})
        return np.corrcoef(g.mean(0).ravel(), images.mean(0).ravel())[0, 1]

    history = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        corr_before = mean_image_corr(sess)
        for _ in range(steps):
            batch = images[rng.choice(len(images), BATCH, replace=False)]
            z = rng.uniform(-1.0, 1.0, [BATCH, NOISE_DIM])
            # float64 labels for int32 placeholders, as the original program feeds them
            batch_disc_y = np.concatenate([np.ones([BATCH]), np.zeros([BATCH])], axis=0)
            batch_gen_y = np.ones([BATCH])
            _, _, gl, dl = sess.run([train_gen, train_disc, gen_loss, disc_loss],
                                    {real: batch, noise: z, disc_target: batch_disc_y,
                                     gen_target: batch_gen_y})
            history.append((gl, dl))
        corr_after = mean_image_corr(sess)
        mm = sess.run(moving_mean)
        samples = sess.run(fake, {noise: rng.uniform(-1, 1, [8, NOISE_DIM]),
                                  is_training: False})
    history = np.array(history)
    print(f"disc loss {history[:10, 1].mean():.3f} -> {history[-50:, 1].mean():.3f}, "
          f"gen loss {history[:10, 0].mean():.3f} -> {history[-50:, 0].mean():.3f}, "
          f"mean-image correlation {corr_before:.3f} -> {corr_after:.3f}")
    return {"history": history, "corr_before": corr_before, "corr_after": corr_after,
            "moving_mean_moved": float(np.abs(mm).max()), "samples": samples,
            "gen_vars": [v.name for v in gen_vars], "disc_vars": [v.name for v in disc_vars]}


if __name__ == "__main__":
    main()
