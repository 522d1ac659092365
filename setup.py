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

PYX = os.path.join("kafkaconsumer", "record", "_crecords.pyx")
# The Arrow decoder (kafkaconsumer.arrow); it needs only the C compiler, pyarrow is imported at
# run time.
ARROW_PYX = os.path.join("kafkaconsumer", "record", "_carrow.pyx")


class OptionalBuildExt(build_ext):
    """A build_ext that warns and goes on when the extension cannot be compiled."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # the compiler itself may be missing
            self._warn(exc)

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


def extensions() -> list[Extension]:
    if os.environ.get("KAFKACONSUMER_NO_EXTENSIONS") == "1" or not os.path.exists(PYX):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        sys.stderr.write("WARNING: Cython is not installed; building without the extension.\n")
        return []
    args = ["-O2"] if os.name != "nt" else []
    exts = [Extension("kafkaconsumer.record._crecords", [PYX], extra_compile_args=args)]
    if os.path.exists(ARROW_PYX):
        exts.append(Extension("kafkaconsumer.record._carrow", [ARROW_PYX], extra_compile_args=args))
    return list(
        cythonize(
            exts,
            language_level=3,
            compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
            quiet=True,
        )
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
