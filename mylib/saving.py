"""`ml.saving`: whole-model files and the registry of serializable classes (Keras 3's
`keras.saving`). See `mylib.models.saving` for the file format."""

from mylib.models.saving import (  # noqa: F401
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    load_model,
    register_keras_serializable,
    register_serializable,
    save_model,
)
