"""`python clients/chat_cli` (or `python -m clients.chat_cli` from the repository): the CLI."""

import sys
from pathlib import Path

if not __package__:  # run as a directory: the repository is what `clients` is found in
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from clients.chat_cli.command import main  # noqa: E402
from clients.chat_cli.defaults import EXIT_INTERRUPTED  # noqa: E402
from clients.chat_cli.stream import Outcome  # noqa: E402

if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        # Ctrl-C before the first request (reading the files, at the prompt's edge): the
        # same quiet ending, one status line, exit 130.
        print(Outcome(kind="interrupted", chunks=0, chars=0).report(terminal=sys.stderr.isatty())[-1], file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
