"""kraftlog's benchmarks, each run as a module from the checkout:
`python -m bench.NAME [options]` (the Makefile's bench targets), and the
side-by-side suite in `bench/suite/` (`kraftlog bench`, `make bench`).
Results go to `bench/results/` (not committed). Benchmarks report figures;
tests never assert timings.
"""
