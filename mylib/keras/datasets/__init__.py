"""`keras.datasets`: `mnist`, `fashion_mnist`, `cifar10`, `cifar100`, `imdb`,
`reuters`, `boston_housing`, each with `load_data()` reading the file Keras caches
(``$KERAS_HOME/datasets``, default ``~/.keras/datasets``) in Keras's own format and
returning the same arrays Keras returns. Nothing is downloaded: a missing file raises
FileNotFoundError naming the URL and the path to place it at."""

from mylib.keras.datasets import (boston_housing, cifar10, cifar100, fashion_mnist,  # noqa: F401
                                  imdb, mnist, reuters)

__all__ = ["boston_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "mnist",
           "reuters"]
