"""Test configuration: 4 host CPU devices (set before JAX starts) so placement and
multi-device tests run on any machine."""

from mylib.devices import set_cpu_device_count

set_cpu_device_count(4)
