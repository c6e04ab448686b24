"""Batch generation: a JSONL of requests in, a JSONL of constrained results out.

    python tpu_scripts/generate.py [CONFIG.yml] [key=value ...] [--flags]

CONFIG defaults to configs/base.yml (SmolLM2 on CPU over configs/examples/requests.jsonl);
`key=value` overrides any config key (see configs/base.yml). Multi-host:
`--coordinator_address=HOST:PORT --num_processes=N --process_id=I` on every host (or
`--distributed` where `jax.distributed.initialize()` finds them itself, as on TPU pods);
the batch is sharded over the devices of all processes, each host filling its own rows' masks.
Paths in a config file are relative to that file's folder; `key=value` overrides are relative
to the working directory.

Exit status: 0 all went well; 1 a constrained result that finished (EOS or grammar end, not cut
off by max_new_tokens) fails its independent check; 2 a bad config value or an unusable input
file (nothing runs), or a request ended in error (its result line says why), which takes
precedence over 1; 130 stopped by Ctrl-C / SIGTERM after the current batch's lines were written
(run the same command again to resume). Statuses 1 and 2 count the last output line of every
input id, whichever run wrote it. A bad command line, and an unexpected exception (a bug: its
traceback is printed), exit 2 as well, never 1.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback

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


class _StopFlag:
    """Set by the first SIGINT / SIGTERM: the job ends after the batch it is writing. A second
    signal exits at once (a resumed run cuts off a torn last line)."""

    def __init__(self) -> None:
        self.signal: int | None = None

    def __call__(self) -> bool:
        return self.signal is not None

    def handle(self, signum: int, frame) -> None:
        del frame
        if self.signal is not None:
            sys.stderr.write(f"\ninterrupted again ({signal.Signals(signum).name}): exiting "
                             "now; run the same command again to resume\n")
            os._exit(130)
        self.signal = signum


def main(argv: list[str]) -> int:
    stop = _StopFlag()
    signal.signal(signal.SIGINT, stop.handle)
    signal.signal(signal.SIGTERM, stop.handle)
    try:
        return _run(argv, stop)
    except app.UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a bug: its traceback, and not status 1 (a failed check)
        traceback.print_exc()
        print(f"error: unexpected {type(e).__name__} (a bug; the traceback is above); the "
              "output keeps the lines written so far", file=sys.stderr)
        return 2


def _run(argv: list[str], stop: _StopFlag) -> int:
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

    from jaxguide.errors import AssetNotFoundError
    from jaxguide.jobs.config import ConfigError
    from jaxguide.jobs.generation_job import (
        JobError,
        load_job_config,
        run_generation_job,
    )

    try:
        config = load_job_config(config_path, overrides)
        summary = run_generation_job(config, stop=stop)
    except (ConfigError, JobError, AssetNotFoundError) as e:
        for line in str(e).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    if FLAGS.summary_json and jax.process_index() == 0:
        with open(FLAGS.summary_json, "w") as f:
            json.dump(summary, f, indent=2)
    return _exit_status(summary, stop)


def _exit_status(summary: dict, stop: _StopFlag) -> int:
    """130 interrupted, 2 a request ended in error, 1 a finished result fails its check, else
    0; a line on stderr says which."""
    if summary["interrupted"]:
        name = signal.Signals(stop.signal).name if stop.signal else "a signal"
        print(f"interrupted by {name}: stopped after writing this run's {summary['generated']} "
              f"generated results to {summary['output']}; run the same command again to "
              "resume", file=sys.stderr)
        return 130
    if summary["errors"]:
        print(f"{summary['errors']} request(s) ended in error: see their result lines in "
              f"{summary['output']}", file=sys.stderr)
        return 2
    if summary["invalid_finished"]:
        print(f"{summary['invalid_finished']} finished constrained result(s) fail their check: "
              f"see \"valid\" in {summary['output']}", file=sys.stderr)
        return 1
    return 0


def _parse_flags(argv: list[str]) -> list[str]:
    """absl's flag parsing, with a bad flag an `error:` line and status 2 (absl's own: 1, the
    status of a failed check here)."""
    try:
        return FLAGS(argv)
    except flags.Error as e:
        print(f"error: {e} (see --help)", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    app.run(main, flags_parser=_parse_flags)
