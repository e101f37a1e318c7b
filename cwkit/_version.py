"""The version of cwkit (read by the build, `cwkit --version` and ``cwkit.__version__``)."""
__version__ = "0.1.0"
