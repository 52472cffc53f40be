"""Keras-style layers: `Layer`, `Input`, `Dense`, `Activation`, `Dropout`, `Flatten`,
`Reshape`, with `activations`, `initializers` and `regularizers`."""

from mylib.layers import activations, backend, initializers, regularizers  # noqa: F401
from mylib.layers.base import Input, InputLayer, InputSpec, Layer  # noqa: F401
from mylib.layers.core import (Activation, Dense, Dropout, Flatten, Masking,  # noqa: F401
                               Reshape)
from mylib.layers import constraints  # noqa: F401,E402
from mylib.layers.convolutional import (  # noqa: F401,E402
    Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose, Conv3D, Conv3DTranspose, Convolution1D,
    Convolution1DTranspose, Convolution2D, Convolution2DTranspose, Convolution3D,
    Convolution3DTranspose, DepthwiseConv2D)
from mylib.layers.normalization import (  # noqa: F401,E402
    BatchNormalization, GroupNormalization, LayerNormalization, RMSNormalization)
from mylib.layers.pooling import (  # noqa: F401,E402
    AdaptiveAveragePooling1D, AdaptiveAveragePooling2D, AdaptiveAveragePooling3D,
    AdaptiveMaxPooling1D, AdaptiveMaxPooling2D, AdaptiveMaxPooling3D,
    AveragePooling1D, AveragePooling2D, AvgPool1D, AvgPool2D, GlobalAveragePooling1D,
    GlobalAveragePooling2D, GlobalAvgPool1D, GlobalAvgPool2D, GlobalMaxPool1D, GlobalMaxPool2D,
    GlobalMaxPooling1D, GlobalMaxPooling2D, MaxPool1D, MaxPool2D, MaxPooling1D, MaxPooling2D,
    AveragePooling3D, AvgPool3D, GlobalAveragePooling3D, GlobalAvgPool3D, GlobalMaxPool3D,
    GlobalMaxPooling3D, MaxPool3D, MaxPooling3D)
from mylib.layers.regularization import (  # noqa: F401,E402
    ActivityRegularization, AlphaDropout, GaussianDropout, GaussianNoise, SpatialDropout1D,
    SpatialDropout2D, SpatialDropout3D)
from mylib.layers.reshaping import (  # noqa: F401,E402
    Cropping1D, Cropping2D, UpSampling1D, UpSampling2D, ZeroPadding1D, ZeroPadding2D)
from mylib.layers.reshaping_3d import UpSampling3D  # noqa: F401,E402
from mylib.layers.embedding import Embedding  # noqa: F401
from mylib.layers.einsum_dense import EinsumDense  # noqa: F401
from mylib.layers.recurrent import GRU, LSTM, SimpleRNN  # noqa: F401
from mylib.layers.rnn_cells import GRUCell, LSTMCell, SimpleRNNCell  # noqa: F401
from mylib.layers.rnn_layer import RNN, StackedRNNCells  # noqa: F401
from mylib.layers.conv_lstm import (ConvLSTM1D, ConvLSTM2D, ConvLSTM3D,  # noqa: F401
                                    ConvLSTMCell)
from mylib.layers.wrappers import Bidirectional, TimeDistributed  # noqa: F401
from mylib.layers.attention import GroupedQueryAttention, MultiHeadAttention  # noqa: F401
GroupQueryAttention = GroupedQueryAttention  # Keras 3 exports the class under this name
from mylib.layers.merging import (Add, Average, Concatenate, Dot, Maximum,  # noqa: F401
                                  Minimum, Multiply, Subtract)
from mylib.layers.reshaping_seq import Permute, RepeatVector  # noqa: F401
from mylib.layers.interop import FlaxLayer, Lambda  # noqa: F401
from mylib.layers.activation_layers import ELU, LeakyReLU, PReLU, ReLU, Softmax  # noqa: F401
from mylib.layers.preprocessing import CategoryEncoding, Normalization, Rescaling  # noqa: F401
from mylib.layers.image_augmentation import (CenterCrop, RandomBrightness,  # noqa: F401
                                             RandomContrast, RandomCrop, RandomFlip,
                                             RandomRotation, RandomTranslation, RandomZoom,
                                             Resizing)
from mylib.layers.lookup import Hashing, IntegerLookup, StringLookup  # noqa: F401
from mylib.layers.text_vectorization import TextVectorization  # noqa: F401
from mylib.layers.dot_attention import AdditiveAttention, Attention  # noqa: F401
from mylib.layers.utility_layers import (Cropping3D, DepthwiseConv1D,  # noqa: F401
                                         Identity, SeparableConv1D, SeparableConv2D,
                                         UnitNormalization, ZeroPadding3D)
SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D  # aliases
from mylib.layers import tf1_functions  # noqa: F401,E402
from mylib.layers.tf1_functions import (average_pooling1d, average_pooling2d,  # noqa: F401,E402
                                        batch_normalization, conv1d, conv2d, conv2d_transpose,
                                        dense, dropout, flatten, max_pooling1d, max_pooling2d)
from mylib.layers.tf1_functions import (average_pooling3d, conv3d,  # noqa: F401,E402
                                        max_pooling3d)
