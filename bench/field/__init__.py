"""The field corpus: recordings generated from real-world mechanisms, with expected verdicts.

Independent of the demo simulator; see docs/field_corpus.md. Import it as
``field`` with ``bench/`` on the path (``bench/field_eval.py`` and
``tests/field/conftest.py`` put it there); ``field.cases.all_cases()`` gives
every case and ``field.evaluate.evaluate(cases)`` scores them.
"""
