"""``python -m vh5 ...``: the vh5 command-line tool (see :mod:`vh5._cli`)."""

from vh5._cli import main

if __name__ == "__main__":
    main()
