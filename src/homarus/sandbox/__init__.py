"""Sandboxed command execution: bind validation, a seccomp filter, the bubblewrap and Docker backends.

Import the modules themselves (``homarus.sandbox.bwrap``, ``.docker``, ``.output``, ``.validate``):
this package file stays empty so that the light ones (``output``) do not load the backends.
"""
