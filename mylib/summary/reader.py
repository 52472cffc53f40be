"""Reading TensorBoard event files back: `summary_iterator` (TensorFlow 1's
`tf.train.summary_iterator`).

An event file is a sequence of TFRecord records: a little-endian uint64 length, the
masked CRC-32C of those 8 bytes, the serialized `Event` proto, its masked CRC-32C.
Every length and checksum is checked before a record is parsed, so a truncated or
altered file raises `DataLossError` instead of yielding garbage.
"""

from __future__ import annotations

import os
import struct

from mylib import errors

__all__ = ["summary_iterator"]

_MAX_RECORD = 1 << 31  # larger than any event a writer emits


def _masked_crc(data):
    from tensorboardX.record_writer import masked_crc32c

    return masked_crc32c(data)


def _records(path):
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        offset = 0
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise errors.DataLossError(f"{path}: truncated record header at byte "
                                           f"{offset}")
            (length,), (crc,) = struct.unpack("<Q", header[:8]), struct.unpack("<I",
                                                                               header[8:])
            if _masked_crc(header[:8]) != crc:
                raise errors.DataLossError(f"{path}: corrupted record length at byte "
                                           f"{offset}")
            if length > _MAX_RECORD:
                raise errors.DataLossError(f"{path}: record of {length} bytes at byte "
                                           f"{offset} is larger than any event")
            if offset + 16 + length > size:  # before reading (allocating) the record
                raise errors.DataLossError(f"{path}: truncated record at byte {offset}: "
                                           f"it claims {length} bytes, the file ends at "
                                           f"byte {size}")
            data = f.read(length)
            footer = f.read(4)
            if len(data) < length or len(footer) < 4:
                raise errors.DataLossError(f"{path}: truncated record at byte {offset}")
            if _masked_crc(data) != struct.unpack("<I", footer)[0]:
                raise errors.DataLossError(f"{path}: corrupted record data at byte {offset}")
            offset += 16 + length
            yield data


def summary_iterator(path):
    """The `Event` protos of the event file `path`, in order (`wall_time`, `step`,
    `summary.value[i].tag` / `.simple_value`, `file_version`, `graph_def`, ...), as
    TensorFlow 1's `tf.train.summary_iterator`.

    Raises:
      NotFoundError: `path` does not exist.
      DataLossError: a truncated record, a checksum mismatch or an unparsable event.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise errors.NotFoundError(f"{path}: no such event file")
    from google.protobuf.message import DecodeError
    from tensorboardX.proto.event_pb2 import Event

    for data in _records(path):
        ev = Event()
        try:
            ev.ParseFromString(data)
        except DecodeError as e:
            raise errors.DataLossError(f"{path}: a record is not an Event proto ({e})") \
                from None
        yield ev
