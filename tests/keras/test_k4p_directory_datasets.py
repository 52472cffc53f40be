"""keras.utils.image_dataset_from_directory / text_dataset_from_directory, checked
against Keras 3 itself: its file indexing and split (keras.src.utils.dataset_utils,
pure Python), its `Resizing` layer on the decoded pixels, and its label encodings."""

import os

import keras
import numpy as np
import pytest
from keras.src.utils import dataset_utils as kdu

from mylib import keras as mk

PIL = pytest.importorskip("PIL.Image")


@pytest.fixture
def image_dir(tmp_path):
    """Three classes (one with a nested folder), PNGs of mixed sizes, one non-image."""
    rs = np.random.RandomState(0)
    for ci, cls in enumerate(["dogs", "cats", "birds"]):
        for i in range(5 + ci):
            sub = tmp_path / cls / ("nested" if cls == "cats" and i % 2 else "")
            sub.mkdir(parents=True, exist_ok=True)
            h, w = (12, 20) if i % 3 else (16, 16)
            arr = rs.randint(0, 256, size=(h, w, 3)).astype(np.uint8)
            PIL.fromarray(arr).save(sub / f"img_{i:02d}.png")
    (tmp_path / "dogs" / "notes.txt").write_text("not an image")
    return tmp_path


def _keras_index(directory, seed, split, subset):
    paths, labels, names = kdu.index_directory(str(directory), "inferred",
                                               formats=(".png",), shuffle=True, seed=seed)
    paths, labels = kdu.get_training_or_validation_split(paths, labels, split, subset)
    return list(paths), list(labels), names


@pytest.mark.parametrize("subset", ["training", "validation"])
def test_files_labels_and_split_match_keras(image_dir, subset):
    ds = mk.utils.image_dataset_from_directory(image_dir, image_size=(8, 8), batch_size=None,
                                               shuffle=True, seed=7, validation_split=0.25,
                                               subset=subset, verbose=False)
    paths, labels, names = _keras_index(image_dir, 7, 0.25, subset)
    assert ds.class_names == names == ["birds", "cats", "dogs"]
    assert ds.file_paths == paths
    got = sorted((float(img.sum()), int(lab)) for img, lab in ds)
    # Each file keeps its own label (read back through the pixels' sums).
    want = []
    for p, lab in zip(paths, labels):
        arr = np.asarray(PIL.open(p).convert("RGB"), np.float32)[None]
        img = np.asarray(keras.layers.Resizing(8, 8)(arr))[0]
        want.append((float(img.sum()), int(lab)))
    np.testing.assert_allclose(np.array(got)[:, 0], np.array(sorted(want))[:, 0], rtol=1e-5)
    assert [g[1] for g in got] == [w[1] for w in sorted(want)]


@pytest.mark.parametrize("kw", [{}, {"crop_to_aspect_ratio": True},
                                {"pad_to_aspect_ratio": True},
                                {"interpolation": "nearest"}])
def test_pixels_match_keras_resizing(image_dir, kw):
    ds = mk.utils.image_dataset_from_directory(image_dir, image_size=(10, 14), shuffle=False,
                                               batch_size=4, verbose=False, **kw)
    images, labels = next(iter(ds))
    assert images.shape == (4, 10, 14, 3) and images.dtype == np.float32
    assert labels.dtype == np.int32
    for img, p in zip(images, ds.file_paths[:4]):
        arr = np.asarray(PIL.open(p).convert("RGB"), np.float32)[None]
        ref = keras.layers.Resizing(10, 14, **kw)(arr)
        np.testing.assert_allclose(img, np.asarray(ref)[0], atol=1e-3)


def test_label_modes_color_modes_and_both_subsets(image_dir):
    train, val = mk.utils.image_dataset_from_directory(
        image_dir, label_mode="categorical", color_mode="grayscale", image_size=8,
        batch_size=5, seed=3, validation_split=0.2, subset="both", verbose=False)
    x, y = next(iter(train))
    assert x.shape == (5, 8, 8, 1) and y.shape == (5, 3) and y.dtype == np.float32
    np.testing.assert_array_equal(y.sum(-1), 1.0)
    assert sum(len(b[0]) for b in val) == int(0.2 * 18)
    assert not set(train.file_paths) & set(val.file_paths)
    # a model trains on it
    model = mk.Sequential([mk.Input((8, 8, 1)), mk.layers.Rescaling(1 / 255.0),
                           mk.layers.Flatten(), mk.layers.Dense(3, activation="softmax")])
    model.compile("adam", "categorical_crossentropy")
    hist = model.fit(train, validation_data=val, epochs=2, verbose=0)
    assert len(hist.history["val_loss"]) == 2
    only_images = mk.utils.image_dataset_from_directory(image_dir, labels=None,
                                                        image_size=8, verbose=False)
    assert next(iter(only_images)).shape == (18, 8, 8, 3)


def test_binary_needs_two_classes_and_bad_arguments(image_dir, tmp_path):
    with pytest.raises(ValueError, match="exactly 2"):
        mk.utils.image_dataset_from_directory(image_dir, label_mode="binary", verbose=False)
    ds = mk.utils.image_dataset_from_directory(image_dir, label_mode="binary",
                                               class_names=["dogs", "cats"], image_size=8,
                                               shuffle=False, verbose=False)
    _, y = next(iter(ds))
    # dogs (5 files) then cats (6), labelled in the order class_names gives them
    np.testing.assert_array_equal(y[:, 0], [0.0] * 5 + [1.0] * 6)
    with pytest.raises(ValueError, match="must provide a `seed`"):
        mk.utils.image_dataset_from_directory(image_dir, validation_split=0.2,
                                              subset="training")
    with pytest.raises(ValueError, match="color_mode"):
        mk.utils.image_dataset_from_directory(image_dir, color_mode="cmyk")
    with pytest.raises(ValueError, match="image_size"):
        mk.utils.image_dataset_from_directory(image_dir, image_size=(8, 8, 3))
    with pytest.raises(ValueError, match="class_names"):
        mk.utils.image_dataset_from_directory(image_dir, class_names=["wolves"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="No images found"):
        mk.utils.image_dataset_from_directory(empty, verbose=False)


def test_text_dataset_from_directory(tmp_path):
    texts = {"neg": ["bad movie", "awful plot twist", "boring"],
             "pos": ["great film", "loved it", "wonderful acting", "superb"]}
    for cls, items in texts.items():
        os.makedirs(tmp_path / cls)
        for i, t in enumerate(items):
            (tmp_path / cls / f"{i}.txt").write_text(t)
    ds = mk.utils.text_dataset_from_directory(tmp_path, batch_size=3, seed=1, max_length=6,
                                              verbose=False)
    paths, labels, names = kdu.index_directory(str(tmp_path), "inferred", formats=(".txt",),
                                               shuffle=True, seed=1)
    assert ds.class_names == names and ds.file_paths == list(paths)
    got = sorted((str(t), int(y)) for xb, yb in ds for t, y in zip(xb, yb))
    want = sorted((open(p).read()[:6], int(y)) for p, y in zip(paths, labels))
    assert got == want
    vec = mk.layers.TextVectorization(max_tokens=20, output_sequence_length=4)
    vec.adapt(ds.map(lambda x, y: x))
    assert "great" in vec.get_vocabulary()
