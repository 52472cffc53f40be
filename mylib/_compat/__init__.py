"""Adapters for the private APIs of Ray (`ray_adapter`). The JAX adapter and the shared
version-checking helpers live in `mylib.devices` (`jax_adapter`, `compat`), the floor
of the house, which `mylib.devices.set_cpu_device_count` needs too.
"""
