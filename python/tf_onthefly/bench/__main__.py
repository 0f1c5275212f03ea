"""python -m tf_onthefly.bench: the input benchmark's command line (the package's docstring)."""

from tf_onthefly.bench import main

if __name__ == "__main__":
    main()
