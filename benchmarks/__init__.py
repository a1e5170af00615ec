"""spacy-biosyn's benchmark suite: each module measures one thing users care
about and prints Markdown tables; `python -m benchmarks` runs them and writes
their tables into docs/benchmarks.md. `benchmarks.stress` holds scripts that
assert rather than measure (fuzzing, kills during saves, hostile text,
processes). Run every module from the checkout's root: `python -m benchmarks.NAME`.
"""
