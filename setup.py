# The only job of setup.py: hook the cffi extension into setuptools (cffi_modules has no
# [project] equivalent). Everything else lives in pyproject.toml.
from setuptools import setup

setup(cffi_modules=["native/build_ffi.py:ffibuilder"])
