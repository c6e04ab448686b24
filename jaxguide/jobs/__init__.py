"""Batch generation jobs: YAML configs (`config.py`) and the checks of their values
(`validation.py`), the request lines (`requests.py`), the result file (`output.py`: append-only,
the last line of each id is its result), the JSONL job the scripts run (`generation_job.py`),
and the checks of generated output against its constraint (`checks.py`)."""
