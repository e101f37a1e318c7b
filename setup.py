"""Declares cwkit's one compiled extension; all metadata lives in pyproject.toml."""
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("CWKIT_CYTHON_DEBUG") == "1"

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    # Every division in the core carries an explicit guard and a comment.
    "cdivision": True,
}

ext = Extension(
    "cwkit._core",
    ["cwkit/_core.pyx"],
    include_dirs=[numpy.get_include()],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    # -g0: no debug information (Python's own CFLAGS ask for -g). It does not change the
    # code the compiler makes, and leaves out a quarter of the compile time (52 s against
    # 70 s for the core on an AMD EPYC) and seven eighths of the object file;
    # CWKIT_CYTHON_DEBUG=1 keeps it.
    # -ffp-contract=off: no multiply and add fused into one rounding where a build
    # targets processors with FMA (-march=native, aarch64), so that results are the
    # same bits everywhere (x86-64's default target has no FMA: no change there).
    extra_compile_args=(["-O3", "-ffp-contract=off"] + ([] if DEBUG else ["-g0"])
                        if os.name != "nt" else []),
)

setup(ext_modules=cythonize([ext], compiler_directives=directives))
