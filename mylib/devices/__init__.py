"""Device names and the local XLA devices.

`DeviceSpec` parses and merges TensorFlow device names
(``/job:worker/replica:0/task:1/device:GPU:0``, short forms ``/cpu:0``, ``GPU:1``);
`list_devices()` lists the local XLA devices through JAX.
"""

from mylib.devices.device_spec import (DeviceSpec, LocalDevice, get_device,  # noqa: F401
                                       list_devices, list_physical_devices,
                                       set_cpu_device_count)
