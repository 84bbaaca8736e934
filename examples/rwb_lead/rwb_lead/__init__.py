"""An example ruwikibench plug-in stage, ``lead``: pick the article's snippets that best match its title,
write the lead (the text before the first heading) from them with one LLM call, score it by ROUGE-L against
the reference lead. Installed, it registers itself through the ``ruwikibench.stages`` entry point
(pyproject.toml)."""
