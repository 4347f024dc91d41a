"""Pure functions that write what people read: the terminal report, the escaping of everything a student controls, Gradescope's results.json. No processes, no files.

No logic here: see the modules."""
