"""Build script: compiles the Cython record decoder when a C compiler is present.

Without a compiler (or without Cython) the package still installs and runs on the pure-Python
record decoder; the build prints a warning instead of failing.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
PYX = os.path.join("kafkaconsumer", "record", "_crecords.pyx")
# The Arrow decoder (kafkaconsumer.arrow); it needs only the C compiler, pyarrow is imported at
# run time.
ARROW_PYX = os.path.join("kafkaconsumer", "record", "_carrow.pyx")
AVRO_PYX = os.path.join("kafkaconsumer", "formats", "_cavro.pyx")
# The thread that receives the rest of a large response without the GIL (Linux).
FRAME_READER_PYX = os.path.join("kafkaconsumer", "network", "_cframe_reader.pyx")
# CRC-32C in C (hardware instruction chosen at run time, or the table method), header only.
CRC_H = os.path.join("kafkaconsumer", "record", "_crc32c.h")


class OptionalBuildExt(build_ext):
    """A build_ext that warns and goes on when the extension cannot be compiled, and stores
    the compiled protocol codecs (kafkaconsumer/protocol/_codecs.marshal, a cache the package
    checks against its generator at run time)."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # the compiler itself may be missing
            self._warn(exc)
        self._write_codecs()

    def _write_codecs(self) -> None:
        in_tree = self.inplace or getattr(self, "editable_mode", False)
        base = HERE if in_tree else os.path.abspath(self.build_lib)
        target = os.path.join(base, "kafkaconsumer", "protocol", "_codecs.marshal")
        try:
            count = _write_compiled_codecs(target)
        except Exception as exc:  # only a start-up cache: the package compiles without it
            sys.stderr.write(f"WARNING: protocol codecs not precompiled ({exc!r}); they are "
                             "compiled on first use instead.\n")
            return
        sys.stderr.write(f"precompiled {count} protocol codecs into {target}\n")

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._warn(exc)

    @staticmethod
    def _warn(exc: BaseException) -> None:
        sys.stderr.write(
            f"WARNING: the Cython record decoder was not built ({exc!r}); "
            "kafkaconsumer will use its pure-Python decoder.\n"
        )


def _write_compiled_codecs(target: str) -> int:
    """Run the codec generator of this source tree and store its compiled codecs in ``target``.

    Only kafkaconsumer.protocol (standard library only) is imported, under a bare parent
    package: the package's own __init__ needs the runtime dependencies, which a build
    environment lacks.
    """
    import importlib
    import types

    saved = {k: v for k, v in sys.modules.items() if k == "kafkaconsumer" or
             k.startswith("kafkaconsumer.")}
    for k in saved:
        del sys.modules[k]
    parent = types.ModuleType("kafkaconsumer")
    parent.__path__ = [os.path.join(HERE, "kafkaconsumer")]
    sys.modules["kafkaconsumer"] = parent
    try:
        codegen = importlib.import_module("kafkaconsumer.protocol.codegen")
        messages = importlib.import_module("kafkaconsumer.protocol.messages")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        return int(codegen.write_compiled(target, messages.APIS))
    finally:
        for k in [k for k in sys.modules if k == "kafkaconsumer" or k.startswith("kafkaconsumer.")]:
            del sys.modules[k]
        sys.modules.update(saved)


def extensions() -> list[Extension]:
    if os.environ.get("KAFKACONSUMER_NO_EXTENSIONS") == "1" or not os.path.exists(PYX):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        sys.stderr.write("WARNING: Cython is not installed; building without the extension.\n")
        return []
    args = ["-O2"] if os.name != "nt" else []
    # Both decoders include the CRC-32C header (and the shared parsing code): a change to
    # either rebuilds them.
    depends = [CRC_H, os.path.join("kafkaconsumer", "record", "_wire.pxd")]
    exts = [Extension("kafkaconsumer.record._crecords", [PYX], extra_compile_args=args,
                      depends=depends)]
    if os.path.exists(ARROW_PYX):
        exts.append(Extension("kafkaconsumer.record._carrow", [ARROW_PYX],
                              extra_compile_args=args, depends=depends))
    if os.path.exists(AVRO_PYX):
        exts.append(Extension("kafkaconsumer.formats._cavro", [AVRO_PYX],
                              extra_compile_args=args))
    if os.path.exists(FRAME_READER_PYX):
        exts.append(Extension("kafkaconsumer.network._cframe_reader", [FRAME_READER_PYX],
                              extra_compile_args=args,
                              extra_link_args=["-pthread"] if os.name != "nt" else []))
    return list(
        cythonize(
            exts,
            language_level=3,
            compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
            quiet=True,
        )
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
