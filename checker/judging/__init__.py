"""Pure functions that judge answers: the one comparison, hints and their names, the edge-case rule, device checks, notebook-global hints, scorecards. No processes, no files.

No logic here: see the modules."""
