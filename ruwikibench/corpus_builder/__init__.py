"""corpus_builder."""
