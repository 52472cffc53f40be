"""CIFAR-10 training in the style of TensorFlow models' `cifar10.py` +
`cifar10_train.py` + `cifar10_eval.py` (TF1): `tf.app.flags`, an input queue
(`slice_input_producer`, random crop/flip/brightness/contrast and hue/saturation
distortions, `per_image_standardization`, `shuffle_batch`), variables on `/cpu:0` made
with `get_variable` and weight decay in a 'losses' collection, `lrn`, loss averages and
variable averages by `ExponentialMovingAverage`, `exponential_decay`, and
`MonitoredTrainingSession` with `StopAtStepHook`, `NanTensorHook` and a logging
`SessionRunHook`; then the eval script's restore of the moving averages
(`variables_to_restore`) and `in_top_k`. Images: generated 16x16 RGB whose class shows
in one colour channel, instead of CIFAR-10."""

import re
import time
from datetime import datetime

import numpy as np

import mylib.compat.v1 as tf

FLAGS = tf.app.flags.FLAGS
tf.app.flags.DEFINE_integer('batch_size', 32, 'b')
tf.app.flags.DEFINE_string('train_dir', '/tmp/t2p_cifar10_train', 'Directory where to write event logs and checkpoint.')
tf.app.flags.DEFINE_integer('max_steps', 80, 'Number of batches to run.')
tf.app.flags.DEFINE_integer('log_frequency', 20, 'l')
IMAGE_SIZE = 12; NUM_CLASSES = 4; NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN = 512
MOVING_AVERAGE_DECAY = 0.9999; NUM_EPOCHS_PER_DECAY = 350.0; LEARNING_RATE_DECAY_FACTOR = 0.1; INITIAL_LEARNING_RATE = 0.1
TOWER_NAME = 'tower'
rng = np.random.RandomState(0)
IM = rng.rand(512, 16, 16, 3).astype(np.float32); LB = rng.randint(0, 4, 512).astype(np.int32)
IM[np.arange(512), :, :, LB % 3] += 1.0
def _activation_summary(x):
  tensor_name = re.sub('%s_[0-9]*/' % TOWER_NAME, '', x.op.name)
  tf.summary.histogram(tensor_name + '/activations', x)
  tf.summary.scalar(tensor_name + '/sparsity', tf.nn.zero_fraction(x))
def _variable_on_cpu(name, shape, initializer):
  with tf.device('/cpu:0'):
    var = tf.get_variable(name, shape, initializer=initializer, dtype=tf.float32)
  return var
def _variable_with_weight_decay(name, shape, stddev, wd):
  var = _variable_on_cpu(name, shape, tf.truncated_normal_initializer(stddev=stddev, dtype=tf.float32))
  if wd is not None:
    weight_decay = tf.multiply(tf.nn.l2_loss(var), wd, name='weight_loss')
    tf.add_to_collection('losses', weight_decay)
  return var
def distorted_inputs():
  image, label = tf.train.slice_input_producer([IM, LB], shuffle=True)
  reshaped_image = tf.cast(image, tf.float32)
  distorted_image = tf.random_crop(reshaped_image, [IMAGE_SIZE, IMAGE_SIZE, 3])
  distorted_image = tf.image.random_flip_left_right(distorted_image)
  distorted_image = tf.image.random_brightness(distorted_image, max_delta=63/255.)
  distorted_image = tf.image.random_contrast(distorted_image, lower=0.2, upper=1.8)
  distorted_image = tf.image.random_saturation(distorted_image, lower=0.8, upper=1.2)
  distorted_image = tf.image.random_hue(distorted_image, max_delta=0.02)
  float_image = tf.image.per_image_standardization(distorted_image)
  float_image.set_shape([IMAGE_SIZE, IMAGE_SIZE, 3])
  min_queue_examples = int(NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN * 0.4)
  images, label_batch = tf.train.shuffle_batch([float_image, label], batch_size=FLAGS.batch_size, num_threads=2, capacity=min_queue_examples + 3 * FLAGS.batch_size, min_after_dequeue=min_queue_examples)
  tf.summary.image('images', images)
  return images, tf.reshape(label_batch, [FLAGS.batch_size])
def inference(images):
  with tf.variable_scope('conv1') as scope:
    kernel = _variable_with_weight_decay('weights', shape=[5, 5, 3, 16], stddev=5e-2, wd=None)
    conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding='SAME')
    biases = _variable_on_cpu('biases', [16], tf.constant_initializer(0.0))
    pre_activation = tf.nn.bias_add(conv, biases)
    conv1 = tf.nn.relu(pre_activation, name=scope.name)
    _activation_summary(conv1)
  pool1 = tf.nn.max_pool(conv1, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding='SAME', name='pool1')
  norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name='norm1')
  with tf.variable_scope('conv2') as scope:
    kernel = _variable_with_weight_decay('weights', shape=[5, 5, 16, 16], stddev=5e-2, wd=None)
    conv = tf.nn.conv2d(norm1, kernel, [1, 1, 1, 1], padding='SAME')
    biases = _variable_on_cpu('biases', [16], tf.constant_initializer(0.1))
    pre_activation = tf.nn.bias_add(conv, biases)
    conv2 = tf.nn.relu(pre_activation, name=scope.name)
    _activation_summary(conv2)
  norm2 = tf.nn.lrn(conv2, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name='norm2')
  pool2 = tf.nn.max_pool(norm2, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding='SAME', name='pool2')
  with tf.variable_scope('local3') as scope:
    reshape = tf.keras.layers.Flatten()(pool2)
    dim = reshape.get_shape()[1].value
    weights = _variable_with_weight_decay('weights', shape=[dim, 64], stddev=0.04, wd=0.004)
    biases = _variable_on_cpu('biases', [64], tf.constant_initializer(0.1))
    local3 = tf.nn.relu(tf.matmul(reshape, weights) + biases, name=scope.name)
    _activation_summary(local3)
  with tf.variable_scope('local4') as scope:
    weights = _variable_with_weight_decay('weights', shape=[64, 32], stddev=0.04, wd=0.004)
    biases = _variable_on_cpu('biases', [32], tf.constant_initializer(0.1))
    local4 = tf.nn.relu(tf.matmul(local3, weights) + biases, name=scope.name)
    _activation_summary(local4)
  with tf.variable_scope('softmax_linear') as scope:
    weights = _variable_with_weight_decay('weights', [32, NUM_CLASSES], stddev=1/32.0, wd=None)
    biases = _variable_on_cpu('biases', [NUM_CLASSES], tf.constant_initializer(0.0))
    softmax_linear = tf.add(tf.matmul(local4, weights), biases, name=scope.name)
    _activation_summary(softmax_linear)
  return softmax_linear
def loss(logits, labels):
  labels = tf.cast(labels, tf.int64)
  cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name='cross_entropy_per_example')
  cross_entropy_mean = tf.reduce_mean(cross_entropy, name='cross_entropy')
  tf.add_to_collection('losses', cross_entropy_mean)
  return tf.add_n(tf.get_collection('losses'), name='total_loss')
def _add_loss_summaries(total_loss):
  loss_averages = tf.train.ExponentialMovingAverage(0.9, name='avg')
  losses = tf.get_collection('losses')
  loss_averages_op = loss_averages.apply(losses + [total_loss])
  for l in losses + [total_loss]:
    tf.summary.scalar(l.op.name + ' (raw)', l)
    tf.summary.scalar(l.op.name, loss_averages.average(l))
  return loss_averages_op
def train(total_loss, global_step):
  num_batches_per_epoch = NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN / FLAGS.batch_size
  decay_steps = int(num_batches_per_epoch * NUM_EPOCHS_PER_DECAY)
  lr = tf.train.exponential_decay(INITIAL_LEARNING_RATE, global_step, decay_steps, LEARNING_RATE_DECAY_FACTOR, staircase=True)
  tf.summary.scalar('learning_rate', lr)
  loss_averages_op = _add_loss_summaries(total_loss)
  with tf.control_dependencies([loss_averages_op]):
    opt = tf.train.GradientDescentOptimizer(lr)
    grads = opt.compute_gradients(total_loss)
  apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
  for var in tf.trainable_variables():
    tf.summary.histogram(var.op.name, var)
  for grad, var in grads:
    if grad is not None:
      tf.summary.histogram(var.op.name + '/gradients', grad)
  variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
  with tf.control_dependencies([apply_gradient_op]):
    variables_averages_op = variable_averages.apply(tf.trainable_variables())
  return variables_averages_op
def main(argv=None):
  losses = []
  if tf.gfile.Exists(FLAGS.train_dir): tf.gfile.DeleteRecursively(FLAGS.train_dir)
  tf.gfile.MakeDirs(FLAGS.train_dir)
  with tf.Graph().as_default():
    global_step = tf.train.get_or_create_global_step()
    with tf.device('/cpu:0'):
      images, labels = distorted_inputs()
    logits = inference(images)
    loss_ = loss(logits, labels)
    train_op = train(loss_, global_step)
    class _LoggerHook(tf.train.SessionRunHook):
      def begin(self):
        self._step = -1; self._start_time = time.time()
      def before_run(self, run_context):
        self._step += 1
        return tf.train.SessionRunArgs(loss_)
      def after_run(self, run_context, run_values):
        if self._step % FLAGS.log_frequency == 0:
          current_time = time.time(); duration = current_time - self._start_time; self._start_time = current_time
          loss_value = run_values.results
          examples_per_sec = FLAGS.log_frequency * FLAGS.batch_size / duration
          sec_per_batch = float(duration / FLAGS.log_frequency)
          losses.append(float(loss_value))
          print('%s: step %d, loss = %.2f (%.1f examples/sec; %.3f sec/batch)' % (datetime.now(), self._step, loss_value, examples_per_sec, sec_per_batch))
    with tf.train.MonitoredTrainingSession(checkpoint_dir=FLAGS.train_dir, hooks=[tf.train.StopAtStepHook(last_step=FLAGS.max_steps), tf.train.NanTensorHook(loss_), _LoggerHook()], config=tf.ConfigProto(log_device_placement=False), save_summaries_steps=20) as mon_sess:
      while not mon_sess.should_stop():
        mon_sess.run(train_op)
  return losses, evaluate()


def evaluate():
  with tf.Graph().as_default():
    images = tf.constant(IM[:128, 2:14, 2:14]); labels = tf.constant(LB[:128])
    logits = inference(images)
    top_k_op = tf.nn.in_top_k(logits, labels, 1)
    variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY)
    variables_to_restore = variable_averages.variables_to_restore()
    saver = tf.train.Saver(variables_to_restore)
    with tf.Session() as sess:
      ckpt = tf.train.get_checkpoint_state(FLAGS.train_dir)
      saver.restore(sess, ckpt.model_checkpoint_path)
      global_step = ckpt.model_checkpoint_path.split('/')[-1].split('-')[-1]
      precision = float(np.mean(sess.run(top_k_op)))
      print('%s: precision @ 1 = %.3f' % (datetime.now(), precision))
      return {"global_step": int(global_step), "precision": precision,
              "restored": sorted(variables_to_restore),
              "checkpoints": list(ckpt.all_model_checkpoint_paths)}


if __name__ == '__main__':
  tf.app.run()
