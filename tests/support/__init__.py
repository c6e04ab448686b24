"""Helpers shared by the tests and the benchmarks: real tokenizers, grammar corpora, the
grammar oracle, fake CPU devices. Import as `support.<module>` with tests/ on sys.path (conftest.py
puts it there for pytest; benchmarks insert it)."""
