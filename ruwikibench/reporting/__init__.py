"""Reports of run directories: tables (:mod:`.tables`), one run's report.md (:mod:`.run_report`), comparisons
of runs (:mod:`.compare`: Markdown, CSV, PNG charts, paired differences) and the HTML pages (:mod:`.html`,
laid out by :mod:`.page` and :mod:`.article_page` from :mod:`.data`). Reads run directories, never runs a
stage."""
