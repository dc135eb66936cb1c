"""The command-line tools: each is ``python -m tools.<name>`` (the pipeline's steps are in
build_steps/, the benchmarks in bench/)."""
