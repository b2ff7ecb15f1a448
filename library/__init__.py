"""miopenkernels: precompiled GPU kernels and MIOpen databases, and the runtime that uses them."""

__version__ = "0.1.0"
