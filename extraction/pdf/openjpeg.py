"""JPEG 2000 data decoded by OpenJPEG with every component as stored, at its own precision.

Pillow decodes JPEG 2000 with OpenJPEG too, but it gives at most 8 bits a component when there is
more than one, looks up a JP2 palette, converts sYCC and takes a fourth component for opacity: a
PDF's reading needs the components as the codestream holds them (see jpx.py). The library is the
one Pillow ships and loads (so `libraries` in the manifest names the OpenJPEG that decoded), found
on the first image that needs it; the system's libopenjp2 otherwise.
"""

import ctypes
import ctypes.util
import glob
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

JP2_SIGNATURE = b"\x00\x00\x00\x0cjP  \r\n\x87\n"
CODEC_J2K, CODEC_JP2 = 0, 2
# opj_dparameters_t is about 8 KiB in OpenJPEG 2.x; OpenJPEG fills it with its defaults.
PARAMETERS_BYTES = 1 << 16
END_OF_STREAM = ctypes.c_size_t(-1).value


class _Component(ctypes.Structure):  # opj_image_comp_t
    _fields_ = [
        (name, ctypes.c_uint32)
        for name in ("dx", "dy", "w", "h", "x0", "y0", "prec", "bpp", "sgnd", "resno_decoded", "factor")
    ]
    _fields_ += [("data", ctypes.POINTER(ctypes.c_int32)), ("alpha", ctypes.c_uint16)]


class _Image(ctypes.Structure):  # opj_image_t
    _fields_ = [(name, ctypes.c_uint32) for name in ("x0", "y0", "x1", "y1", "numcomps")]
    _fields_ += [
        ("color_space", ctypes.c_int),
        ("comps", ctypes.POINTER(_Component)),
        ("icc_profile_buf", ctypes.c_void_p),
        ("icc_profile_len", ctypes.c_uint32),
    ]


READ = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
SKIP = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
SEEK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p)


@dataclass(frozen=True)
class Plane:
    """One decoded component: width x height samples (native int32), each of `dx` x `dy` image pixels."""

    width: int
    height: int
    dx: int
    dy: int
    precision: int
    signed: bool
    samples: bytes


def decode(data: bytes) -> list[Plane]:
    """Every component of a JP2 file or a raw codestream; ValueError when OpenJPEG cannot decode it."""
    lib = _library()
    codec = lib.opj_create_decompress(CODEC_JP2 if data.startswith(JP2_SIGNATURE) else CODEC_J2K)
    stream, _callbacks = _stream(lib, data)  # the callbacks must outlive the stream
    image = ctypes.POINTER(_Image)()
    try:
        parameters = ctypes.create_string_buffer(PARAMETERS_BYTES)
        lib.opj_set_default_decoder_parameters(parameters)
        done = (
            lib.opj_setup_decoder(codec, parameters)
            and lib.opj_read_header(stream, codec, ctypes.byref(image))
            and lib.opj_decode(codec, stream, image)
            and lib.opj_end_decompress(codec, stream)
        )
        if not done or not image:
            raise ValueError("OpenJPEG could not decode the JPEG 2000 data")
        return [_plane(image.contents.comps[i]) for i in range(image.contents.numcomps)]
    finally:
        if image:
            lib.opj_image_destroy(image)
        lib.opj_stream_destroy(stream)
        lib.opj_destroy_codec(codec)


def _plane(component: _Component) -> Plane:
    if not component.data:
        raise ValueError("OpenJPEG decoded a component without samples")
    samples = ctypes.string_at(component.data, component.w * component.h * 4)
    return Plane(
        component.w,
        component.h,
        max(1, component.dx),
        max(1, component.dy),
        component.prec,
        bool(component.sgnd),
        samples,
    )


def _stream(lib: ctypes.CDLL, data: bytes) -> tuple[Any, tuple[Any, Any, Any]]:
    """An OpenJPEG input stream reading `data` from memory."""
    position = [0]

    def read(buffer: int, size: int, _user: object) -> int:
        start = position[0]
        if start >= len(data):
            return END_OF_STREAM
        chunk = data[start : start + size]
        ctypes.memmove(buffer, chunk, len(chunk))
        position[0] += len(chunk)
        return len(chunk)

    def skip(count: int, _user: object) -> int:
        moved = min(max(position[0] + count, 0), len(data)) - position[0]
        position[0] += moved
        return moved if moved or not count else -1

    def seek(offset: int, _user: object) -> int:
        if not 0 <= offset <= len(data):
            return 0
        position[0] = offset
        return 1

    callbacks = (READ(read), SKIP(skip), SEEK(seek))
    stream = lib.opj_stream_default_create(1)
    lib.opj_stream_set_read_function(stream, callbacks[0])
    lib.opj_stream_set_skip_function(stream, callbacks[1])
    lib.opj_stream_set_seek_function(stream, callbacks[2])
    lib.opj_stream_set_user_data_length(stream, len(data))
    return stream, callbacks


@cache
def _library() -> ctypes.CDLL:
    from PIL import Image

    shipped = glob.glob(os.path.join(os.path.dirname(os.path.dirname(Image.__file__)), "pillow.libs", "libopenjp2*"))
    path = shipped[0] if shipped else ctypes.util.find_library("openjp2")
    if not path:
        raise ValueError("no OpenJPEG library to decode JPEG 2000 with")
    lib = ctypes.CDLL(path)
    pointer, flag = ctypes.c_void_p, ctypes.c_int
    signatures = {
        "opj_create_decompress": ([flag], pointer),
        "opj_set_default_decoder_parameters": ([pointer], None),
        "opj_setup_decoder": ([pointer, pointer], flag),
        "opj_stream_default_create": ([flag], pointer),
        "opj_stream_set_read_function": ([pointer, READ], None),
        "opj_stream_set_skip_function": ([pointer, SKIP], None),
        "opj_stream_set_seek_function": ([pointer, SEEK], None),
        "opj_stream_set_user_data_length": ([pointer, ctypes.c_uint64], None),
        "opj_read_header": ([pointer, pointer, ctypes.POINTER(ctypes.POINTER(_Image))], flag),
        "opj_decode": ([pointer, pointer, ctypes.POINTER(_Image)], flag),
        "opj_end_decompress": ([pointer, pointer], flag),
        "opj_image_destroy": ([ctypes.POINTER(_Image)], None),
        "opj_stream_destroy": ([pointer], None),
        "opj_destroy_codec": ([pointer], None),
    }
    for name, (arguments, result) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = arguments, result
    return lib
