"""Batch generation jobs: YAML configs (`config.py`), the JSONL job the scripts run
(`generation_job.py`), and the checks of generated output against its constraint (`checks.py`)."""
