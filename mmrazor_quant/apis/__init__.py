"""The top layer: what ``tools/*.py`` call (parse the command line, load
the config, build the Runner, run, tear down). Nothing below imports it."""
from .runner_cli import (
                         apply_runner_args,
                         build_runner,
                         parse_runner_args,
                         run_and_teardown,
                         runner_arg_parser,
)

__all__ = [
    'runner_arg_parser', 'parse_runner_args', 'apply_runner_args',
    'build_runner', 'run_and_teardown'
]
