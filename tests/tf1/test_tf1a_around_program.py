"""What surrounds a TensorFlow 1 program: `ml.app`/`ml.flags` (absl), `ml.gfile` /
`ml.io.gfile`, `ml.logging`, `ml.compat` (+ `compat.v1`), TF1 summaries through
`FileWriter`, and the TensorBoard projector config."""

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mylib as tf
from mylib import errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_gfile_both_spellings(tmp_path):
    gf = tf.io.gfile
    assert gf is tf.gfile
    d = tmp_path / "a" / "b"
    gf.makedirs(str(d))
    assert gf.exists(str(d)) and gf.IsDirectory(str(d))
    p = str(d / "f.txt")
    with gf.GFile(p, "w") as f:
        f.write("one\n")
        f.write(b"two\n")
    with tf.gfile.Open(p) as f:
        assert [line for line in f] == ["one\n", "two\n"]
    with gf.GFile(p, "rb") as f:
        assert f.read() == b"one\ntwo\n" and f.size() == 8
    gf.copy(p, str(d / "g.txt"))
    with pytest.raises(errors.AlreadyExistsError):
        gf.Copy(p, str(d / "g.txt"))
    gf.rename(str(d / "g.txt"), str(d / "h.txt"))
    assert sorted(gf.listdir(str(d))) == ["f.txt", "h.txt"]
    assert gf.Glob(str(d / "*.txt")) == [p, str(d / "h.txt")]
    assert gf.stat(p).length == 8 and not gf.stat(p).is_directory
    gf.remove(str(d / "h.txt"))
    with pytest.raises(errors.NotFoundError):
        gf.remove(str(d / "h.txt"))
    with pytest.raises(errors.NotFoundError):
        gf.GFile(str(d / "missing"))
    with pytest.raises(errors.UnimplementedError, match="gs"):
        gf.exists("gs://bucket/x")
    gf.DeleteRecursively(str(tmp_path / "a"))
    assert not gf.Exists(str(tmp_path / "a"))


def test_compat_strings_and_v1_namespace():
    assert tf.compat.as_bytes("é") == "é".encode() and tf.compat.as_str(b"ab") == "ab"
    assert tf.compat.as_text(bytearray(b"x")) == "x"
    with pytest.raises(TypeError):
        tf.compat.as_bytes(3)
    v1 = tf.compat.v1
    for name in ("Session", "placeholder", "train", "summary", "GradientTape", "logging",
                 "app", "flags", "gfile", "global_variables_initializer", "Summary"):
        assert getattr(v1, name) is getattr(tf, name)
    assert v1.executing_eagerly() is False
    v1.disable_eager_execution()
    v1.disable_v2_behavior()
    with pytest.raises(NotImplementedError, match="Session"):
        v1.enable_eager_execution()
    assert v1.data.Dataset is tf.data.Dataset
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        v1.no_such_name
    import mylib.compat.v1 as tf1

    assert tf1.train.AdamOptimizer is tf.train.AdamOptimizer
    assert "Session" in dir(tf1)


def test_logging_module(caplog):
    tf.logging.set_verbosity(tf.logging.INFO)
    assert tf.logging.get_verbosity() == logging.INFO
    with caplog.at_level(logging.DEBUG, logger="mylib"):
        tf.logging.info("step %d", 3)
        tf.logging.warn("careful")
        tf.logging.debug("detail")
        for _ in range(5):
            tf.logging.log_every_n(tf.logging.INFO, "every %d", 2, 2)
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs[:3] == ["step 3", "careful", "detail"]
    assert msgs.count("every 2") == 3
    tf.logging.set_verbosity(tf.logging.WARN)


PROGRAM = '''
import mylib as tf
flags = tf.app.flags
flags.DEFINE_integer("steps", 5, "Steps.")
flags.DEFINE_float("lr", 0.5, "Rate.")
flags.DEFINE_string("name", "x", "Name.")
flags.DEFINE_boolean("fast", False, "Fast.")
FLAGS = flags.FLAGS

def main(argv):
    print("ARGS", FLAGS.steps, FLAGS.lr, FLAGS.name, FLAGS.fast, argv[1:])
    return 3

if __name__ == "__main__":
    tf.app.run()
'''


def test_app_run_and_flags_in_a_process(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, str(script), "--steps=7", "--fast", "--name", "y",
                          "--unknown_flag=1", "extra"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 3, out.stderr
    assert "ARGS 7 0.5 y True ['--unknown_flag=1', 'extra']" in out.stdout


def test_flags_read_before_parse_parses_known_only():
    from absl import flags as absl_flags

    fv = absl_flags.FlagValues()
    absl_flags.DEFINE_integer("width", 3, "w", flag_values=fv)
    from mylib.flags import _FlagValuesWrapper

    w = _FlagValuesWrapper(fv)
    old = sys.argv
    sys.argv = ["prog", "--width=9", "--other=1"]
    try:
        assert w.width == 9
        w._parse_flags()  # TensorFlow <= 1.4's spelling: already parsed, no effect
        assert w.__flags["width"] == 9
    finally:
        sys.argv = old


def test_tf1_summaries_through_file_writer(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None])
        tf.summary.scalar("batch_mean", tf.reduce_mean(x))
        tf.summary.histogram("values", x)
        merged = tf.summary.merge_all()
        writer = tf.summary.FileWriter(str(tmp_path), g)
        with tf.Session() as s:
            for step in range(3):
                writer.add_summary(s.run(merged, {x: np.arange(4.0) + step}), step)
        custom = tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.75)])
        writer.add_summary(custom, 3)
        writer.close()
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert [round(e.value, 4) for e in acc.Scalars("batch_mean")] == [1.5, 2.5, 3.5]
    assert acc.Scalars("acc")[0].value == 0.75
    assert "values" in acc.Tags()["histograms"]


def test_projector_config_and_tsv_export(tmp_path):
    from google.protobuf import text_format
    from mylib.contrib.tensorboard.plugins import projector
    from tensorboard.plugins.projector import projector_config_pb2

    emb_value = np.arange(12, dtype=np.float32).reshape(4, 3)
    with tf.Graph().as_default():
        emb = tf.Variable(emb_value, name="embedding")
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            tf.train.Saver().save(s, str(tmp_path / "model.ckpt"), 1)
        writer = tf.summary.FileWriter(str(tmp_path))
        config = projector.ProjectorConfig()
        e = config.embeddings.add()
        e.tensor_name = emb.name
        e.metadata_path = "metadata.tsv"
        projector.visualize_embeddings(writer, config)
        writer.close()
    text = (tmp_path / "projector_config.pbtxt").read_text()
    parsed = text_format.Parse(text, projector_config_pb2.ProjectorConfig())
    info = parsed.embeddings[0]
    assert info.tensor_name == "embedding:0" and info.metadata_path == "metadata.tsv"
    assert list(info.tensor_shape) == [4, 3]
    np.testing.assert_allclose(np.loadtxt(tmp_path / info.tensor_path, delimiter="\t"),
                               emb_value)
    bad = projector.ProjectorConfig()
    bad.embeddings.add().tensor_name = "nope:0"
    with pytest.raises(ValueError, match="nope"):
        projector.visualize_embeddings(str(tmp_path), bad)


def test_program_template_runs_under_compat_v1(tmp_path):
    """A `tensorflow.compat.v1`-style script with only the import changed."""
    src = textwrap.dedent('''
        import numpy as np
        import mylib.compat.v1 as tf
        tf.disable_v2_behavior()
        x = tf.placeholder(tf.float32, [None, 1])
        w = tf.Variable(tf.zeros([1, 1]))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 2.0 * x))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(100):
                sess.run(train, {x: np.linspace(-1, 1, 8).reshape(8, 1)})
            print("W", round(float(sess.run(w)[0, 0]), 3))
    ''')
    script = tmp_path / "p.py"
    script.write_text(src)
    env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "W 2.0" in out.stdout
