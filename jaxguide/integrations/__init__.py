"""Adapters to decode loops that others own.

`jaxguide.integrations.maxtext`: grammar constraints in MaxText's `MaxEngine` loop (needs
MaxText, Python >= 3.12; imported only when used). Gemma-style sampler loops need no adapter:
`jaxguide.ConstrainedBatch`'s hooks fit them as they are (see
`examples/gemma_style_sampler.py`).
"""
