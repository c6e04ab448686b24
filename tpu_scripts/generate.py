"""Batch generation: a JSONL of requests in, a JSONL of constrained results out.

    python tpu_scripts/generate.py [CONFIG.yml] [key=value ...] [--flags]

CONFIG defaults to configs/base.yml (SmolLM2 on CPU over configs/examples/requests.jsonl);
`key=value` overrides any config key (see configs/base.yml). Multi-host:
`--coordinator_address=HOST:PORT --num_processes=N --process_id=I` on every host (or
`--distributed` where `jax.distributed.initialize()` finds them itself, as on TPU pods);
the batch is sharded over the devices of all processes, each host filling its own rows' masks.
Exit status: 1 if a constrained result that finished (EOS or grammar end, not cut off by
max_new_tokens) fails its independent check, 2 on a bad config or input file, else 0.
"""

from __future__ import annotations

import json
import os
import sys

from absl import app, flags, logging

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FLAGS = flags.FLAGS
flags.DEFINE_string("coordinator_address", None,
                    "host:port of process 0 for jax.distributed.initialize")
flags.DEFINE_integer("num_processes", None, "number of processes (jax.distributed)")
flags.DEFINE_integer("process_id", None, "this process's id (jax.distributed)")
flags.DEFINE_bool("distributed", False,
                  "call jax.distributed.initialize() with no arguments (TPU pods, SLURM)")
flags.DEFINE_string("summary_json", None, "also write the summary to this JSON file")


def _split_args(argv: list[str]) -> tuple[str, list[str]]:
    config = os.path.join(ROOT, "configs", "base.yml")
    overrides = []
    for arg in argv[1:]:
        if "=" in arg:
            overrides.append(arg)
        elif arg.endswith((".yml", ".yaml")) and config == os.path.join(ROOT, "configs",
                                                                        "base.yml"):
            config = arg
        else:
            raise app.UsageError(f"unexpected argument {arg!r}: give one CONFIG.yml and "
                                 "key=value overrides")
    return config, overrides


def main(argv: list[str]) -> int:
    config_path, overrides = _split_args(argv)
    logging.set_verbosity(logging.WARNING)  # JAX's backend probing at INFO is noise here
    import jax

    if FLAGS.coordinator_address or FLAGS.num_processes or FLAGS.process_id is not None:
        if FLAGS.coordinator_address is None or FLAGS.num_processes is None \
                or FLAGS.process_id is None:
            raise app.UsageError("--coordinator_address, --num_processes and --process_id go "
                                 "together")
        # CPU processes need a collectives backend (TPU/GPU have their own).
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(FLAGS.coordinator_address, FLAGS.num_processes,
                                   FLAGS.process_id)
    elif FLAGS.distributed:
        jax.distributed.initialize()

    from jaxguide.jobs.config import ConfigError, load_config
    from jaxguide.jobs.generation_job import JobError, run_generation_job

    try:
        config = load_config(config_path, overrides)
        summary = run_generation_job(config)
    except (ConfigError, JobError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if FLAGS.summary_json and jax.process_index() == 0:
        with open(FLAGS.summary_json, "w") as f:
            json.dump(summary, f, indent=2)
    return 1 if summary["invalid_finished"] else 0


if __name__ == "__main__":
    app.run(main)
