"""`python -m kraftlog`: the same as the `kraftlog` console script."""
from kraftlog.cli import main

if __name__ == "__main__":
    main()
