"""The repository's measurements (README.md here): each module a script run from the
repository's root with the package installed, `python -m benchmarks.<name>`, and all of them
on a GPU host by `python -m benchmarks.run`. Not part of the package."""
