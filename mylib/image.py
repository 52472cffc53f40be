"""`ml.image`: image ops (TensorFlow's `tf.image`): resize, flips, crops and pads,
brightness/contrast, (in `mylib.core.ops.image_color_ops`) HSV and hue/saturation/gamma,
dtype conversion, standardization, and (in
`mylib.core.ops.image_quality_ops`) sobel_edges, total_variation, psnr, ssim,
crop_and_resize, non_max_suppression. See `mylib.core.ops.image_ops`."""

from mylib.core.ops.image_ops import *  # noqa: F401,F403
from mylib.core.ops.image_ops import __all__ as _all

from mylib.core.ops.image_quality_ops import *  # noqa: F401,F403,E402
from mylib.core.ops.image_quality_ops import __all__ as _quality_all  # noqa: E402

from mylib.core.ops.image_color_ops import *  # noqa: F401,F403,E402
from mylib.core.ops.image_color_ops import __all__ as _color_all  # noqa: E402

__all__ = list(_all) + list(_quality_all) + list(_color_all)
